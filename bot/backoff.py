"""Retrying a connection with exponential backoff, told in one log line per attempt.

With the network down, an operator wants to see that relbot keeps trying, how long it
waits and why each attempt failed; not a traceback per retry.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

MAX_REASON = 300  # characters of an error kept in a log line


def reason(err: BaseException) -> str:
    """The first line of ``err``, with its type: ``ConnectionRefusedError: [Errno 111] …``."""
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    line = f"{type(err).__name__}: {first}" if first else type(err).__name__
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 1] + "…"


@dataclass
class Backoff:
    """Delays of 1, 2, 4 … seconds up to ``cap``, for one thing being reached (``what``)."""

    what: str
    first: float = 1.0
    cap: float = 60.0
    attempts: int = 0

    def failed(self, logger: logging.Logger, err: BaseException) -> float:
        """Log one line for the attempt that just failed; returns how long to wait."""
        self.attempts += 1
        delay: float = min(self.cap, self.first * 2.0 ** min(self.attempts - 1, 30))
        logger.warning(
            "%s: attempt %d failed (%s); retrying in %.0f s",
            self.what,
            self.attempts,
            reason(err),
            delay,
        )
        return delay


class OneLineRetries(logging.Filter):
    """A filter for an SDK's logger that logs each failed reconnect with a traceback: the
    records whose message starts with one of ``prefixes`` keep one line, the reason
    appended, and lose the traceback."""

    def __init__(self, *prefixes: str) -> None:
        super().__init__()
        self._prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.getMessage().startswith(self._prefixes):
            err = record.exc_info[1]
            record.msg = f"{record.getMessage()} ({reason(err) if err else 'no reason'})"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
