"""Logging in to a download server that does not answer costs the bot its connect deadline
(``storage.connect_timeout``), whichever step of the login the server hangs in: the TCP
handshake (an accept queue that is full), the SSH banner (a stopped sshd) or the
authentication (a key lookup that hangs). Then one sentence, and the next scan tries again.
Real sshd processes on loopback; the bot uses only the key it was given."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from bot.app import build_storage
from bot.config import load_config
from bot.errors import StagingUnreachable
from bot.storage.sftp import SftpStorage, SshRefused
from tests.sshd import SshServer

DEADLINE = 1.0  # storage.connect_timeout in these tests
WITHIN = 4.0  # the deadline, the retries that fit in it, and the test's own overhead


def first_look(server: SshServer, tmp_path: Path, *, port: int | None = None) -> tuple[str, float]:
    """The sentence the first look at staging stops with, and how long it took."""
    storage = SftpStorage(
        "127.0.0.1",
        port or server.port,
        server.user,
        server.client_key,
        server.known_hosts,
        str(tmp_path),
        str(tmp_path / "public"),
        connect_timeout=DEADLINE,
    )
    return look(storage)


def look(storage: SftpStorage) -> tuple[str, float]:
    """The sentence ``storage``'s first look at staging stops with, and how long it took."""
    before = set(threading.enumerate())  # other tests' connections may still be open
    started = time.monotonic()
    try:
        with pytest.raises(StagingUnreachable) as stopped:
            storage.staged_tags()
    finally:
        storage.close()
    took = time.monotonic() - started
    for thread in set(threading.enumerate()) - before:  # paramiko's logs as it ends
        if isinstance(thread, paramiko.Transport):
            thread.join(timeout=10)
    assert not isinstance(stopped.value, SshRefused)  # a hang is retried, not a refusal
    return str(stopped.value), took


def test_a_server_whose_accept_queue_is_full_costs_the_deadline(
    sshd: SshServer, tmp_path: Path
) -> None:
    """The kernel drops the handshake of a listener that accepts nothing more: without a
    deadline of its own, connect() would wait for the kernel's retries (minutes)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        queued = []
        for _ in range(4):  # fill the queue (the kernel keeps one more than asked)
            queued.append(socket.socket())
            queued[-1].setblocking(False)
            queued[-1].connect_ex(("127.0.0.1", port))
        time.sleep(0.2)
        try:
            message, took = first_look(sshd, tmp_path, port=port)
        finally:
            for s in queued:
                s.close()

    assert message == (
        f"Cannot reach [127.0.0.1]:{port} (timed out); check the host, the port and the network."
    )
    assert took < WITHIN


@pytest.fixture
def stopped_sshd(own_sshd: SshServer) -> Iterator[SshServer]:
    """An sshd whose listener is stopped (SIGSTOP): the kernel completes the handshake, no
    banner ever comes."""
    assert own_sshd._process is not None
    pid = own_sshd._process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield own_sshd
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_server_that_sends_no_banner_costs_the_deadline(
    stopped_sshd: SshServer, tmp_path: Path
) -> None:
    message, took = first_look(stopped_sshd, tmp_path)

    assert message == (
        f"Cannot reach [127.0.0.1]:{stopped_sshd.port} (no SSH handshake within 1 s); check the "
        "host, the port and the network."
    )
    assert took < WITHIN


def test_a_configured_bot_waits_10_s_for_the_handshake_as_the_readme_says(
    stopped_sshd: SshServer, tmp_path: Path
) -> None:
    """The default deadline, as an operator's config gets it (no setting names it)."""
    config = tmp_path / "relbot.toml"
    config.write_text(
        textwrap.dedent(f"""
        [storage]
        kind = "sftp"
        host = "127.0.0.1"
        port = {stopped_sshd.port}
        user = "{stopped_sshd.user}"
        key_file = "{stopped_sshd.client_key}"
        known_hosts = "{stopped_sshd.known_hosts}"
        staging = "{tmp_path / "staging"}"
        public = "{tmp_path / "public"}"

        [people.hugo]
        rm = ["3.14"]
        roles = ["source"]
        """)
    )
    storage = build_storage(load_config(config))
    assert isinstance(storage, SftpStorage)  # kind = "sftp"

    message, took = look(storage)

    assert message == (
        f"Cannot reach [127.0.0.1]:{stopped_sshd.port} (no SSH handshake within 10 s); check "
        "the host, the port and the network."
    )
    assert 10 <= took < 10 + WITHIN


@pytest.fixture
def slow_keys_sshd(tmp_path: Path) -> Iterator[SshServer]:
    """An sshd that looks up authorized keys with a command that hangs (an LDAP or a network
    directory that does not answer). sshd runs such a command only from a folder no one but
    root may write to, all the way up: /run, not the world-writable /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="relbot-keys-", dir="/run"))
    lookup = folder / "keys-lookup"
    lookup.write_text("#!/bin/sh\nexec sleep 30\n")
    lookup.chmod(0o755)
    server = SshServer.create(
        tmp_path / "sshd",
        extra_config=f"AuthorizedKeysCommand {lookup} %u\nAuthorizedKeysCommandUser root",
    )
    (server.root / "authorized_keys").write_text("")  # the command is the only source
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder)


def test_a_server_that_hangs_in_the_key_lookup_costs_the_deadline(
    slow_keys_sshd: SshServer, tmp_path: Path
) -> None:
    message, took = first_look(slow_keys_sshd, tmp_path)

    assert message == (  # not "refused the key": nothing was refused, and it is retried
        f"[127.0.0.1]:{slow_keys_sshd.port} did not answer the login within 1 s; it is tried "
        "again on the next scan."
    )
    assert took < WITHIN


def test_only_the_configured_key_is_offered_not_the_agents_nor_the_home_folders(
    sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server accepts the key in the operator's agent and in ~/.ssh; the bot's
    configured key is another. The bot must not log in with what it was not given."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_bytes(sshd.client_key.read_bytes())
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    agent = subprocess.run(
        ["ssh-agent", "-s", "-a", str(tmp_path / "agent.sock")],
        capture_output=True,
        text=True,
        check=True,
    )
    agent_pid = int(agent.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
        subprocess.run(["ssh-add", "-q", str(home / ".ssh" / "id_ed25519")], check=True)
        stranger = tmp_path / "stranger"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", stranger], check=True)
        storage = SftpStorage(
            "127.0.0.1",
            sshd.port,
            sshd.user,
            stranger,
            sshd.known_hosts,
            str(tmp_path),
            str(tmp_path / "public"),
            connect_timeout=DEADLINE,
        )
        try:
            with pytest.raises(SshRefused) as refused:
                storage.staged_tags()
        finally:
            storage.close()
    finally:
        os.kill(agent_pid, signal.SIGTERM)

    assert str(refused.value).startswith(f"[127.0.0.1]:{sshd.port} refused the key {stranger}")
