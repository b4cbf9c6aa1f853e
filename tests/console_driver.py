"""Drive ``relbot run`` (the console platform) as a subprocess, the way a person types."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

RELBOT = Path(sys.executable).with_name("relbot")


@dataclass
class Session:
    before_confirm: str  # stdout up to the plan's confirm line
    after_confirm: str  # the rest of stdout
    stderr: str
    returncode: int


def publish_through_console(
    cwd: Path,
    lines: Sequence[str],
    tag: str,
    *,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    at_plan: Callable[[], None] | None = None,
    timeout: float = 120,
) -> Session:
    """Type ``lines`` (ending with ``/publish TAG``), wait for the plan, call ``at_plan``,
    type the confirm line the plan printed, close stdin, and wait for the bot to finish."""
    confirm = re.compile(rf"/publish {re.escape(tag)} confirm [A-Z0-9]{{6,12}}")
    bot = subprocess.Popen(
        [str(RELBOT), "run", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert bot.stdin is not None and bot.stdout is not None
    bot.stdin.write("\n".join(lines) + "\n")
    bot.stdin.flush()
    seen = []
    for line in bot.stdout:
        seen.append(line)
        if match := confirm.search(line):
            break
    else:
        bot.kill()
        _, err = bot.communicate(timeout=60)
        raise AssertionError("no confirm line in:\n" + "".join(seen) + "\nstderr:\n" + err)
    if at_plan is not None:
        at_plan()
    out, err = bot.communicate(match.group(0) + "\n", timeout=timeout)
    return Session("".join(seen), out, err, bot.returncode)
