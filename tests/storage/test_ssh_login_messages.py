"""The sentences an operator meets when the bot cannot log in to the download server
(bot/storage/ssh.py): each names the setting to fix and how, word for word, because on the
first day these sentences are the documentation. Against a real OpenSSH server on loopback,
with real key files made by ssh-keygen."""

from __future__ import annotations

import socket
import socketserver
import subprocess
import threading
import time
from pathlib import Path

import pytest

from bot.errors import StagingUnreachable
from bot.storage.sftp import HostKeyRejected, SftpStorage, SshRefused
from tests.sshd import SshServer


def keygen(path: Path, *args: str) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-C", "test", "-f", path, *args], check=True)
    return path


def login(
    server: SshServer,
    tmp_path: Path,
    *,
    key: Path | None = None,
    known_hosts: Path | None = None,
    passphrase: str | None = None,
    port: int | None = None,
) -> StagingUnreachable:
    """What the first look at staging stops with."""
    storage = SftpStorage(
        "127.0.0.1",
        port or server.port,
        server.user,
        key or server.client_key,
        known_hosts or server.known_hosts,
        str(tmp_path),
        str(tmp_path / "public"),
        passphrase=passphrase,
        connect_timeout=1,
    )
    try:
        with pytest.raises(StagingUnreachable) as stopped:
            storage.staged_tags()
    finally:
        storage.close()
    return stopped.value


def test_an_unknown_host_key_says_how_to_add_it(sshd: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    where = f"[127.0.0.1]:{sshd.port}"

    refused = login(sshd, tmp_path, known_hosts=known)

    assert isinstance(refused, HostKeyRejected)
    assert str(refused) == (
        f"The SSH host key of {where} is not in {known}; add it with "
        f"`ssh-keyscan -p {sshd.port} 127.0.0.1 >> {known}` after checking its fingerprint "
        "with the server's admins."
    )


def test_a_changed_host_key_warns_of_interception_and_says_how_to_replace_it(
    sshd: SshServer, tmp_path: Path
) -> None:
    other = keygen(tmp_path / "other", "-t", "ed25519", "-N", "")
    known = tmp_path / "known_hosts"
    where = f"[127.0.0.1]:{sshd.port}"
    known.write_text(f"{where} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")

    refused = login(sshd, tmp_path, known_hosts=known)

    assert isinstance(refused, HostKeyRejected)
    assert str(refused) == (
        f"The SSH host key of {where} differs from the one in {known}: someone may be "
        "intercepting the connection. If the server's key really changed, remove the old "
        f"line (ssh-keygen -R '{where}' -f {known}) and add the new one with "
        f"`ssh-keyscan -p {sshd.port} 127.0.0.1 >> {known}`."
    )


def test_a_missing_known_hosts_file_says_how_to_create_it(sshd: SshServer, tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"

    refused = login(sshd, tmp_path, known_hosts=nowhere)

    assert isinstance(refused, SshRefused)  # not retried: someone must act
    assert str(refused) == (
        f"storage.known_hosts: cannot read {nowhere} (No such file or directory); create it "
        f"with the server's key: ssh-keyscan -p {sshd.port} 127.0.0.1 >> {nowhere} "
        "(check the fingerprint)."
    )


def test_a_key_the_server_does_not_know_says_where_to_add_it(
    sshd: SshServer, tmp_path: Path
) -> None:
    stranger = keygen(tmp_path / "stranger", "-t", "ed25519", "-N", "")

    refused = login(sshd, tmp_path, key=stranger)

    assert isinstance(refused, SshRefused)
    assert str(refused) == (
        f"[127.0.0.1]:{sshd.port} refused the key {stranger} for user {sshd.user}; add its "
        f"public key to ~{sshd.user}/.ssh/authorized_keys on the server."
    )


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa"])
def test_a_key_with_a_passphrase_and_none_given_says_where_to_give_it(
    sshd: SshServer, tmp_path: Path, kind: str
) -> None:
    locked = keygen(tmp_path / kind, "-t", kind, "-N", "correct horse")

    assert str(login(sshd, tmp_path, key=locked)) == (
        f"storage.key_file: {locked} is protected by a passphrase; provide it through the "
        "configured environment variable."
    )


@pytest.mark.parametrize("content", ["a wrong guess", "not a key"], ids=["passphrase", "file"])
def test_a_wrong_passphrase_or_a_file_that_is_no_key_is_one_sentence(
    sshd: SshServer, tmp_path: Path, content: str
) -> None:
    if content == "a wrong guess":
        key = keygen(tmp_path / "rsa", "-t", "rsa", "-b", "2048", "-N", "correct horse")
        passphrase: str | None = content
    else:
        key, passphrase = tmp_path / "id_ed25519", None
        key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n")

    message = str(login(sshd, tmp_path, key=key, passphrase=passphrase))

    assert message == (
        f"storage.key_file: {key} is not an Ed25519, RSA or ECDSA private key this passphrase "
        "opens; check the file and the passphrase."
    )
    assert "correct horse" not in message and "a wrong guess" not in message


def test_an_unreadable_key_file_names_the_file_and_why(sshd: SshServer, tmp_path: Path) -> None:
    missing = tmp_path / "id_ed25519"

    assert str(login(sshd, tmp_path, key=missing)) == (
        f"storage.key_file: cannot read {missing} (No such file or directory)."
    )


def test_a_port_nobody_listens_on_says_what_to_check(sshd: SshServer, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]  # bound, not listening: connections are refused

        unreachable = login(sshd, tmp_path, port=free)

        assert not isinstance(unreachable, SshRefused)  # the next scan tries again
        assert str(unreachable) == (
            f"Cannot reach [127.0.0.1]:{free} (Connection refused); check the host, the port "
            "and the network."
        )


class _NotSsh(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")


def test_a_port_where_another_service_answers_says_so_at_once(
    sshd: SshServer, tmp_path: Path
) -> None:
    """A web server on the configured port answers and hangs up: paramiko's reason, not a
    handshake that timed out."""
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _NotSsh) as web:
        threading.Thread(target=web.serve_forever, daemon=True).start()
        try:
            started = time.monotonic()
            answered = login(sshd, tmp_path, port=web.server_address[1])
            waited = time.monotonic() - started
        finally:
            web.shutdown()

    assert str(answered) == (
        f"Cannot reach [127.0.0.1]:{web.server_address[1]} (Error reading SSH protocol banner); "
        "check the host, the port and the network."
    )
    assert waited < 1  # connect_timeout: every attempt was answered
