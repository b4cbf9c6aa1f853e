"""A real uploader for the tests: a non-root account (``relbot-uploader``) created by the
test itself (tests run as root), which writes into staging as the release team does, either
locally (a child process running under its uid, gid and groups, so the kernel enforces every
permission) or over SFTP (logging in as it to the test sshd with a key of its own).

``tests/storage/conftest.py`` imports the fixtures (``uploader``, ``shared_root``) for the
storage tests; a ``conftest.py`` elsewhere can do the same."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import paramiko
import pytest

from tests.machine_lock import machine_lock
from tests.sshd import SshServer

NAME = "relbot-uploader"


@dataclass(frozen=True)
class Uploader:
    """The uploader's account: ``run`` and ``start`` execute shell as it, ``sftp`` logs in as
    it. Nothing it does goes through the bot."""

    name: str
    uid: int
    gid: int
    home: Path

    def _argv(self, script: str) -> list[str]:
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--init-groups",
            "--reset-env",
            "sh",
            "-c",
            script,
        ]

    def run(self, script: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``script`` (sh) as the uploader and wait; the caller looks at the result."""
        return subprocess.run(
            self._argv(script), cwd=cwd, capture_output=True, text=True, timeout=60, check=False
        )

    def start(self, script: str, *, cwd: Path | None = None) -> subprocess.Popen[str]:
        """Start ``script`` as the uploader and leave it running (a shell holding a file open,
        or sitting in a folder); it reads its stdin line by line where it needs to wait."""
        return subprocess.Popen(
            self._argv(script),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def authorize(self) -> Path:
        """A key of the uploader's own, in its ``~/.ssh/authorized_keys`` (the test sshd
        reads it there, as the uploader)."""
        ssh = self.home / ".ssh"
        key = ssh / "relbot-test-key"
        with machine_lock("accounts"):
            if key.exists():
                return key
            ssh.mkdir(mode=0o700, exist_ok=True)
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.name, "-f", key],
                check=True,
            )
            with (ssh / "authorized_keys").open("a") as f:
                f.write(key.with_suffix(".pub").read_text())
            subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(ssh)], check=True)
            return key

    @contextlib.contextmanager
    def sftp(self, server: SshServer) -> Iterator[paramiko.SFTPClient]:
        """An SFTP session logged in as the uploader."""
        client = paramiko.SSHClient()
        client.load_host_keys(str(server.known_hosts))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        client.connect(
            "127.0.0.1",
            server.port,
            username=self.name,
            key_filename=str(self.authorize()),
            allow_agent=False,
            look_for_keys=False,
            timeout=10,
        )
        try:
            yield client.open_sftp()
        finally:
            client.close()


def ensure_uploader() -> Uploader:
    """The uploader's account, created when missing (by this test run or an earlier one)."""
    with machine_lock("accounts"):
        return _ensure_uploader()


def _ensure_uploader() -> Uploader:
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--create-home", "--user-group", "--shell", "/bin/sh", NAME],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode not in (0, 9):  # 9: made meanwhile by another test run
            pytest.fail(f"cannot create the uploader account: {made.stderr}", pytrace=False)
        entry = pwd.getpwnam(NAME)
    # Not locked (sshd refuses a locked account), and no password either: keys only.
    subprocess.run(["usermod", "-p", "*", NAME], check=True, capture_output=True)
    return Uploader(NAME, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


@pytest.fixture
def uploader() -> Uploader:
    if os.geteuid() != 0:
        pytest.fail("these tests create an account: run them as root (CI does)", pytrace=False)
    return ensure_uploader()


@pytest.fixture
def shared_root() -> Iterator[Path]:
    """A folder both the bot (root) and the uploader can reach (pytest's own temporary
    folders are root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="relbot-uploader-test-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        with contextlib.suppress(OSError):
            subprocess.run(["chattr", "-R", "-i", str(root)], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
