"""A crash restarts at once: ``relbot run`` over SFTP (a real subprocess against the real
sshd) killed with SIGKILL in the middle of a stopped publish, then started again as the
shipped unit would, takes its own storage lock over at once and resumes the publish at its
first scan, not after the lock's five-minute staleness."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import textwrap
import threading
import time
from pathlib import Path

from bot.demo import stage_demo
from bot.domain.profile import load_profile
from bot.ports.lease import Holder
from tests.console_driver import RELBOT
from tests.pinned import NO_SIGNATURES, RELEASE_CYCLE_LINE
from tests.sshd import SshServer

TIMEOUT = 90
CODE = "K7Q2XF3M"
# Long enough that only the scan at start can publish within the test: a lock taken over
# only once stale (five minutes) would leave the publish waiting well past TIMEOUT.
POLL = 600


class Bot:
    """``relbot run`` on the console, its output read line by line as it comes."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [str(RELBOT), "run"],
            cwd=cwd,
            env={**os.environ, "RELBOT_CONSOLE_FIXED_CODE": CODE},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def type(self, *lines: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("".join(f"{line}\n" for line in lines))
        self.process.stdin.flush()

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                assert self.process.poll() is None, "relbot run exited:\n" + self._stderr()
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} never came; output:\n{''.join(self.seen)}")

    def _stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read()


def test_relbot_run_killed_over_sftp_is_taken_over_at_once_and_resumes_the_publish(
    tmp_path: Path, sshd: SshServer
) -> None:
    staging, public = tmp_path / "srv" / "staging", tmp_path / "srv" / "public"
    (tmp_path / "relbot.toml").write_text(
        RELEASE_CYCLE_LINE
        + textwrap.dedent(f"""
        poll_interval = {POLL}

        [storage]
        kind = "sftp"
        host = "127.0.0.1"
        port = {sshd.port}
        user = "{sshd.user}"
        key_file = "{sshd.client_key}"
        known_hosts = "{sshd.known_hosts}"
        staging = "{staging}"
        public = "{public}"

        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs", "windows", "macos"]
        """)
        + NO_SIGNATURES
    )
    staged = stage_demo(staging, load_profile("cpython"))
    public.mkdir(parents=True)
    blocker = public / "3.14.1"
    blocker.write_text("a file where the release's folder goes")  # the publish stops

    first = Bot(tmp_path)
    first.type(*(f"/ready {role} 3.14.1" for role in ("source", "docs", "windows", "macos")))
    first.type("/publish 3.14.1")
    first.wait_for(f"/publish 3.14.1 confirm {CODE}")
    first.type(f"/publish 3.14.1 confirm {CODE}")
    first.wait_for("did not finish")
    lock = tmp_path / "srv" / ".relbot-public" / "lock"
    holder = Holder.from_bytes(lock.read_bytes())
    assert holder is not None and holder.pid == first.process.pid
    first.process.send_signal(signal.SIGKILL)  # as the kernel's OOM killer would
    first.process.wait(timeout=TIMEOUT)
    blocker.unlink()  # the cause is gone meanwhile

    again = Bot(tmp_path)  # the unit restarts it (RestartSec=10s)
    try:
        again.wait_for("3.14.1 is published")
        assert len([p for p in (public / "3.14.1").rglob("*") if p.is_file()]) > 0
        taken = Holder.from_bytes(lock.read_bytes())
        assert taken is not None and taken.pid == again.process.pid
    finally:
        assert again.process.stdin is not None
        again.process.stdin.close()
        assert again.process.wait(timeout=TIMEOUT) == 0, again._stderr()
    published = {p.name for p in public.rglob("*") if p.is_file()}
    assert published == {p.name for p in staged}
    assert "Another relbot holds the storage" not in "".join(again.seen)
