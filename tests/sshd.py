"""A real OpenSSH server on 127.0.0.1 with throw-away keys, for the tests and the bench.

One implementation, imported by ``tests/storage/conftest.py`` and ``bench/``.
"""

from __future__ import annotations

import getpass
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")  # sshd refuses to start unless called by its absolute path
MISSING = (
    f"{SSHD} is missing: the SFTP storage tests need a real OpenSSH server; "
    "run `make test` (it installs openssh-server) or `apt-get install -y openssh-server`."
)


@dataclass
class SshServer:
    """An sshd listening on 127.0.0.1:``port`` that accepts ``client_key`` for ``user``.

    ``known_hosts`` holds its host key as ``[127.0.0.1]:PORT``. :meth:`stop` takes the
    server down the way a crash or a reboot does: every open session dies with it.
    """

    root: Path
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    host_key: Path
    config: Path
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @classmethod
    def create(cls, root: Path, *, extra_config: str = "") -> SshServer:
        """Generate keys and a config in ``root`` (not started yet)."""
        if not SSHD.exists():
            raise RuntimeError(MISSING)
        root.mkdir(parents=True, exist_ok=True)
        host_key, client_key = root / "host_ed25519", root / "client_ed25519"
        for key in (host_key, client_key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "relbot-test", "-f", key],
                check=True,
            )
        (root / "authorized_keys").write_text(client_key.with_suffix(".pub").read_text())
        port = free_port()
        known_hosts = root / "known_hosts"
        host_public = " ".join(host_key.with_suffix(".pub").read_text().split()[:2])
        known_hosts.write_text(f"[127.0.0.1]:{port} {host_public}\n")
        config = root / "sshd_config"
        # bash, started by sshd for a command, reads the account's ~/.bashrc: where that runs
        # `pyenv init` (root's on the CI machine), each command costs 130 ms more and the
        # commands of parallel tests wait on pyenv's rehash lock, printing its complaint on
        # stderr. A shell one level down (SHLVL) skips it.
        lines = extra_config.splitlines()
        setenv = [
            "SHLVL=1",
            *(v for line in lines if line.startswith("SetEnv ") for v in line.split()[1:]),
        ]
        others = [line for line in lines if not line.startswith("SetEnv ")]
        config.write_text(
            "\n".join(
                [
                    "ListenAddress 127.0.0.1",
                    f"HostKey {host_key}",
                    f"PidFile {root / 'sshd.pid'}",
                    # Then the user's own file: accounts other than the one running the
                    # tests (an uploader) log in with keys of their own.
                    f"AuthorizedKeysFile {root / 'authorized_keys'} .ssh/authorized_keys",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "PermitRootLogin prohibit-password",
                    "Subsystem sftp internal-sftp",
                    "MaxStartups 100",
                    # sshd takes the first SetEnv line only: one line for all of them.
                    "SetEnv " + " ".join(setenv),
                    *others,
                    "",
                ]
            )
        )
        return cls(root, port, getpass.getuser(), client_key, known_hosts, host_key, config)

    def start(self) -> None:
        """Start sshd and wait until it answers with its SSH banner."""
        if os.geteuid() == 0:
            # Privilege separation needs this empty folder when sshd runs as root.
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        log = (self.root / "sshd.log").open("ab")
        self._process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", self.config, "-p", str(self.port)],
            stdout=log,
            stderr=log,
        )
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"sshd exited at start: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(64).startswith(b"SSH-"):
                        return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"sshd did not answer on port {self.port}: {self.log_tail()}")

    def stop(self) -> None:
        """Kill sshd and every session it forked, so open connections drop at once."""
        if self._process is None:
            return
        # Collect the tree before killing: once the listener is gone its sessions are
        # re-parented and no longer findable.
        for pid in [*_descendants(self._process.pid), self._process.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        self._process.wait(timeout=10)
        self._process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self) -> str:
        path = self.root / "sshd.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc (sshd sessions call setsid, so a
    process group would not catch them)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
