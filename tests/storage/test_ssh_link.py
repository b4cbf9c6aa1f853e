"""The shared SSH connection (bot/storage/ssh.py) when the server drops it or a command on it
goes wrong: a server restarting is waited for within the call, a connection that died since
the last call is replaced without a word, a command cut off with its connection is a lost
connection, a command killed by a signal is only that command's failure, and a command that
never ends costs its deadline. Against a real OpenSSH server on loopback, with the faults made
for real (sshd stopped, sessions killed, commands that hang)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bot.errors import StagingUnreachable
from bot.storage import ssh
from bot.storage.ssh import Connection, Endpoint, SshLink
from tests.sshd import SshServer, _descendants

# Each read's deadline: short, as a test of a command that never ends waits for it, yet not so
# short that sshd, on a machine busy with the other test workers, misses it for an answer.
IO_TIMEOUT = 3


@contextmanager
def linked(server: SshServer, connect_timeout: float = 5) -> Iterator[SshLink]:
    endpoint = Endpoint(
        "127.0.0.1",
        server.port,
        server.user,
        server.client_key,
        server.known_hosts,
        passphrase=None,
        connect_timeout=connect_timeout,
        io_timeout=IO_TIMEOUT,
    )
    made = SshLink(endpoint, Counter())
    try:
        yield made
    finally:
        with made.lock:
            made.drop()


@pytest.fixture
def link(own_sshd: SshServer) -> Iterator[SshLink]:
    with linked(own_sshd) as made:
        yield made


def kill_sessions(server: SshServer) -> None:
    """The server's side of every open connection dies (a reboot, an OOM kill); the bot's
    side has not noticed yet."""
    assert server._process is not None
    for pid in _descendants(server._process.pid):
        os.kill(pid, signal.SIGKILL)


def test_a_connection_that_died_since_the_last_call_is_replaced_and_the_call_succeeds(
    link: SshLink, own_sshd: SshServer
) -> None:
    assert link.call("list /", lambda conn: "tmp" in conn.sftp.listdir("/"))
    dying = [True]

    def listing(conn: Connection) -> bool:
        if dying.pop() if dying else False:
            kill_sessions(own_sshd)  # between the bot's look at the connection and its use
        return "tmp" in conn.sftp.listdir("/")

    assert link.call("list /", listing)
    assert link.requests["connect"] == 2


def test_a_command_cut_off_with_its_connection_is_run_again_on_a_new_one(
    link: SshLink,
) -> None:
    """Its missing exit status is not taken for the command's answer."""
    assert link.call("run true", lambda conn: link.exec(conn, "true")) == (0, b"", b"")
    commands = iter(["echo cut; kill -9 $PPID; sleep 5", "echo whole"])  # $PPID: the session

    result = link.call("run a command", lambda conn: link.exec(conn, next(commands)))

    assert result == (0, b"whole\n", b"")
    assert link.requests["connect"] == 2


def test_a_command_cut_off_on_a_new_connection_is_reported_as_a_lost_connection(
    link: SshLink, own_sshd: SshServer
) -> None:
    with pytest.raises(StagingUnreachable) as lost:
        link.call("hash files", lambda conn: link.exec(conn, "kill -9 $PPID; sleep 5"))

    assert str(lost.value) == (
        f"Lost the connection to [127.0.0.1]:{own_sshd.port} while trying to hash files; "
        "it is re-established on the next try."
    )
    assert link.requests["connect"] == 1  # the next try is the next scan's


def test_a_command_killed_by_a_signal_fails_alone_and_the_connection_is_kept(
    link: SshLink,
) -> None:
    """The server reports a signal, not an exit status: the command failed, nothing more."""
    killed = link.call("run a command", lambda conn: link.exec(conn, "kill -9 $$"))
    after = link.call("run a command", lambda conn: link.exec(conn, "echo still here"))

    assert killed == (-1, b"", b"")
    assert after == (0, b"still here\n", b"")
    assert link.requests["connect"] == 1


def test_a_command_that_never_ends_costs_its_deadline_and_the_connection(
    link: SshLink, own_sshd: SshServer
) -> None:
    """A hash of a file on a hung network mount, say: the server answers, the command does
    not finish."""
    started = time.monotonic()
    with pytest.raises(StagingUnreachable) as stopped:
        link.call("hash files", lambda conn: link.exec(conn, "sleep 20"))
    waited = time.monotonic() - started
    after = link.call("run a command", lambda conn: link.exec(conn, "echo answered"))

    assert str(stopped.value) == (
        f"[127.0.0.1]:{own_sshd.port} stopped answering while trying to hash files."
    )
    assert IO_TIMEOUT <= waited < IO_TIMEOUT + 4
    assert after == (0, b"answered\n", b"")
    assert link.requests["connect"] == 2  # the stuck connection was not used again


def test_an_idle_connection_sends_keepalives(
    link: SshLink, own_sshd: SshServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between scans the connection is idle for minutes: a keepalive now and then stops a
    firewall or NAT from forgetting it (every 30 s; here every 0.2 s)."""
    monkeypatch.setattr(ssh, "KEEPALIVE_SECONDS", 0.2)
    log = own_sshd.root / "sshd.log"
    own_sshd.config.write_text(own_sshd.config.read_text() + "LogLevel DEBUG1\n")
    own_sshd.restart()
    link.call("connect", lambda conn: None)

    time.sleep(1)

    assert log.read_text(errors="replace").count("rtype keepalive@lag.net") >= 2


def test_a_server_back_within_the_connect_timeout_is_reached_by_the_same_call(
    link: SshLink, own_sshd: SshServer
) -> None:
    own_sshd.stop()
    restart = threading.Timer(0.1, own_sshd.start)  # sshd coming back after a reboot
    restart.start()
    try:
        listed = link.call("list /", lambda conn: "tmp" in conn.sftp.listdir("/"))
    finally:
        restart.join()

    assert listed
    assert link.requests["connect"] in (2, 3)  # tried again after 0.2 s, then 0.5 s


@pytest.mark.parametrize(("connect_timeout", "attempts"), [(0.1, 1), (0.6, 2), (1.5, 3)])
def test_a_server_that_stays_down_is_tried_within_one_connect_timeout(
    own_sshd: SshServer, connect_timeout: float, attempts: int
) -> None:
    """Attempts at 0, 0.2 and 0.7 s, those that fit in the timeout: the scan that called
    has its own, longer backoff."""
    own_sshd.stop()
    with linked(own_sshd, connect_timeout) as down:
        started = time.monotonic()
        with pytest.raises(StagingUnreachable) as refused:
            down.call("list /", lambda conn: conn.sftp.listdir("/"))
        waited = time.monotonic() - started

    assert str(refused.value) == (
        f"Cannot reach [127.0.0.1]:{own_sshd.port} (Connection refused); "
        "check the host, the port and the network."
    )
    assert down.requests["connect"] == attempts
    assert waited < connect_timeout
