"""Waiting in tests for something observable, with a deadline, instead of sleeping a fixed time."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO, TypeVar

T = TypeVar("T")


def wait_until(
    what: str, probe: Callable[[], T | None], timeout: float = 30.0, every: float = 0.05
) -> T:
    """Call ``probe`` until it returns something true, and return that; raises
    :class:`AssertionError` naming ``what`` once ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


class Drained:
    """The lines a child process writes to one pipe, read as they come by a thread (so the
    child never blocks on a full pipe and a test can watch the output grow)."""

    def __init__(self, stream: IO[str] | None) -> None:
        assert stream is not None, "start the process with this stream piped"
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line)

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def text(self, process: subprocess.Popen[str]) -> str:
        """Everything written, once ``process`` has exited and the pipe is closed."""
        process.wait(timeout=60)
        self._thread.join(timeout=60)
        return "".join(self.lines)
