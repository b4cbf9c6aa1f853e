"""A program the uploader account runs (stdlib only, ``python3 uploader_swaps.py``) to race
the bot: each line on stdin asks for one ``renameat2(RENAME_EXCHANGE)`` of two names of its
own, either once the kernel reports a removal in a folder (inotify ``IN_DELETE``: the bot's
first unlink there) or after a delay, or for a tight loop of exchanges until told to stop.

Commands (one line each, fields separated by tabs):

- ``swap WATCH DELAY_US A B``: watch folder WATCH (``-``: none), print ``armed``; on the
  first removal in it (or at once without a watch), wait DELAY_US microseconds, exchange A
  and B, print ``swapped`` (or ``missed WHY``: no removal within a second, or the exchange
  failed).
- ``spin A B``: print ``armed``, exchange A and B again and again until stdin gives a line
  (any), then print the number of exchanges done.
"""

from __future__ import annotations

import ctypes
import os
import select
import sys
import time

RENAME_EXCHANGE = 2
AT_FDCWD = -100
IN_DELETE = 0x200
IN_NONBLOCK = 0o4000

libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: str, b: str) -> str:
    """ "" when done, else the kernel's reason."""
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE) == 0:
        return ""
    return os.strerror(ctypes.get_errno())


def swap(watch: str, delay_us: int, a: str, b: str) -> str:
    fd = -1
    if watch != "-":
        fd = libc.inotify_init1(IN_NONBLOCK)
        if fd < 0 or libc.inotify_add_watch(fd, watch.encode(), IN_DELETE) < 0:
            return f"missed inotify: {os.strerror(ctypes.get_errno())}"
    print("armed", flush=True)
    try:
        if fd >= 0 and not select.select([fd], [], [], 1.0)[0]:
            return "missed no removal"
        if delay_us:
            time.sleep(delay_us / 1e6)
        why = exchange(a, b)
    finally:
        if fd >= 0:
            os.close(fd)
    return f"missed {why}" if why else "swapped"


def spin(a: str, b: str) -> str:
    print("armed", flush=True)
    done = 0
    while not select.select([sys.stdin], [], [], 0)[0]:
        if not exchange(a, b):
            done += 1
    sys.stdin.readline()
    return str(done)


def main() -> None:
    for line in sys.stdin:
        command, *args = line.rstrip("\n").split("\t")
        if command == "swap":
            print(swap(args[0], int(args[1]), args[2], args[3]), flush=True)
        elif command == "spin":
            print(spin(args[0], args[1]), flush=True)


if __name__ == "__main__":
    main()
