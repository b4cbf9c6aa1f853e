"""Untrusted text made safe to show: file names and reasons typed by people reach the
channel, the console and ``relbot audit``, where a newline could forge a line and an ANSI
escape could repaint the terminal."""

from __future__ import annotations

import re
from collections.abc import Sequence

# C0 and C1 controls, DEL, the Unicode line/paragraph separators and bidirectional
# overrides (which can make a line read as something else), and lone surrogates (the
# bytes of a file name that are not UTF-8).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def shown(text: str) -> str:
    """``text`` with every unsafe character written as a visible escape (``\\n``,
    ``\\x1b``, ``\\xff`` for a byte that was not UTF-8); printable text is unchanged."""
    return _UNSAFE.sub(_escape, text)


def typed_text(words: Sequence[str]) -> str:
    """Free text typed in a command (the reason of a hold, a waiver; a path to waive), as it
    is recorded and then shown everywhere (the channel, the console, the board, ``relbot
    status`` and ``audit``): the words joined by one space, every unsafe character escaped.
    The one place where what people type is made safe to show."""
    return shown(" ".join(words))


def is_safe(text: str) -> bool:
    """Whether ``text`` shows as itself (nothing :func:`shown` would escape)."""
    return _UNSAFE.search(text) is None


def not_utf8(err: UnicodeDecodeError) -> str:
    """The sentence for a file that is not UTF-8 (a config or profile saved as Latin-1)."""
    byte = err.object[err.start : err.start + 1].hex()
    return f"not UTF-8 (byte 0x{byte} at offset {err.start}); save the file as UTF-8."


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def listing(paths: list[str], limit: int = 5) -> str:
    """``a, b, c and 4 more``."""
    head = ", ".join(paths[:limit])
    return head + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def size_text(size: int) -> str:
    """``512 bytes``, ``4.3 GB``: a size as people read it (powers of 1000)."""
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
