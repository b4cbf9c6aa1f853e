"""A download server that takes the connection and never answers (a hung sshd) costs the
bot one sentence per attempt, not paramiko's own traceback: its transport thread logs the
connection it gave up on as some twenty ERROR lines, kept for ``--log-level debug``."""

from __future__ import annotations

import io
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.logs import setup_logging
from bot.storage.sftp import SftpStorage
from tests.storage.test_ssh_login_deadlines import look


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never sends a byte (no SSH banner)."""
    held: list[socket.socket] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)

        def accept() -> None:
            while True:
                try:
                    held.append(listener.accept()[0])
                except OSError:
                    return  # closed at the end of the test

        threading.Thread(target=accept, daemon=True).start()
        yield listener.getsockname()[1]
    for connection in held:
        connection.close()


def log_of_one_attempt(level: str, port: int, tmp_path: Path) -> str:
    """What the bot's log says, at ``level``, of one look at staging on ``port``."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", tmp_path / "key"], check=True
    )
    (tmp_path / "known_hosts").write_text("")
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("paramiko").level
    stream = io.StringIO()
    stderr, sys.stderr = sys.stderr, stream
    try:
        setup_logging(level, "text")
        storage = SftpStorage(
            "127.0.0.1",
            port,
            "relbot",
            tmp_path / "key",
            tmp_path / "known_hosts",
            "/srv/staging",
            "/srv/public",
            connect_timeout=1.0,
        )
        look(storage)  # and its paramiko thread, which logs as it ends, waited for
    finally:
        sys.stderr = stderr
        root.handlers[:], root.level = saved[0], saved[1]
        logging.getLogger("paramiko").setLevel(saved[2])
    return stream.getvalue()


def test_a_server_that_never_answers_leaves_no_paramiko_traceback_in_the_log(
    silent_port: int, tmp_path: Path
) -> None:
    log = log_of_one_attempt("info", silent_port, tmp_path)

    assert "paramiko" not in log and "Traceback" not in log, log


def test_at_debug_level_paramikos_own_account_is_kept(silent_port: int, tmp_path: Path) -> None:
    log = log_of_one_attempt("debug", silent_port, tmp_path)

    assert "ERROR paramiko.transport: Exception (client): Error reading SSH protocol banner" in log
