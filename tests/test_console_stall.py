"""From outside, as the issue was found: ``relbot run`` on the console, a sparse 100 GB
tarball staged with ``truncate`` and one ``/ready``. The bot answers naming the file, keeps
answering, keeps scanning and ``/healthz`` stays 200."""

from __future__ import annotations

import os
import queue
import subprocess
import textwrap
import threading
import time
from pathlib import Path
from typing import IO

import httpx

from bot.config import load_config
from bot.domain.tags import ReleaseTag
from tests.conftest import TEAM_TOML, with_signing_opt_out
from tests.console_driver import RELBOT
from tests.sshd import free_port
from tests.test_staging_stall import REDO, TAG, TARBALL, sparse

DEADLINE = 120.0  # seconds a step may take on a loaded machine before the test gives up


class Lines:
    """The bot's stdout, line by line, read by a thread of its own (a pipe read never
    blocks the test beyond its deadline)."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put("")

    def until(self, wanted: str) -> str:
        """The lines up to the one holding ``wanted`` (within :data:`DEADLINE`)."""
        seen: list[str] = []
        end = time.monotonic() + DEADLINE
        while not seen or wanted not in seen[-1]:
            try:
                line = self._lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {wanted!r} in:\n" + "".join(seen)) from None
            assert line, "stdout ended before: " + wanted + "\n" + "".join(seen)
            seen.append(line)
        return "".join(seen)


def test_a_sparse_100_gb_tarball_leaves_the_console_scans_and_healthz_answering(
    tmp_path: Path,
) -> None:
    port = free_port()
    team = textwrap.dedent(TEAM_TOML).replace(
        "confirm_timeout", "poll_interval = 2\nconfirm_timeout"
    )
    toml = with_signing_opt_out(team) + f"\n[health]\nport = {port}\n"
    (tmp_path / "relbot.toml").write_text(toml, encoding="utf-8")
    config = load_config(tmp_path / "relbot.toml")
    staging = tmp_path / "data" / "staging" / TAG
    for expected in config.profile.expected(ReleaseTag.parse(TAG)):
        (staging / expected.path).parent.mkdir(parents=True, exist_ok=True)
        (staging / expected.path).write_bytes(f"{expected.path}\n".encode())
    sparse(staging / TARBALL, "100G")
    (tmp_path / "data" / "public").mkdir()

    bot = subprocess.Popen(
        [str(RELBOT), "run", "--as", "hugo"],
        cwd=tmp_path,
        env={**os.environ},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert bot.stdin is not None and bot.stdout is not None
    lines = Lines(bot.stdout)
    try:
        bot.stdin.write(f"/ready source {TAG}\n")
        bot.stdin.flush()
        ready = lines.until("source is not ready")
        bot.stdin.write(f"/status {TAG}\n")
        bot.stdin.flush()
        status = lines.until("branch 3.14")
        healthy = []
        with httpx.Client(timeout=DEADLINE, trust_env=False) as client:
            for _ in range(5):  # over several poll intervals: scans keep succeeding
                response = client.get(f"http://127.0.0.1:{port}/healthz")
                healthy.append((response.status_code, response.json()["scans"]))
                time.sleep(2)
        bot.stdin.close()
        bot.wait(timeout=DEADLINE)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    assert bot.stderr is not None
    err = bot.stderr.read()

    named = f"{TARBALL} (107.4 GB, more than the 4.3 GB such a file may be; {REDO})"
    assert named in ready
    assert named in status and "windows  complete" in status, status
    assert [code for code, _ in healthy] == [200] * 5, healthy
    assert healthy[-1][1] > healthy[0][1], healthy  # scans ran meanwhile
    assert "Traceback" not in err and bot.returncode == 0, err
