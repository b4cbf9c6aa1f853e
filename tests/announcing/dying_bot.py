"""``relbot`` that kills itself with SIGKILL at one moment of the publish pipeline, as the
kernel's OOM killer would: no handler runs, nothing buffered is written, the journal is left as
it was at that moment. ``python -m tests.announcing.dying_bot WHEN STEP relbot-args…`` where
WHEN is ``started`` (just after STEP's start is journaled: nothing of the step done) or
``done`` (the step's work done, just before it is journaled as done: for ``announce``, between
the post and the journal)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from bot.cli import main
from bot.domain.history import Event, EventKind
from bot.domain.tags import ReleaseTag
from bot.journal.store import StateStore

WHEN = ("started", "done")


def die_at(when: str, step: str) -> None:
    """Make every journal of this process kill it at ``when`` of ``step``."""
    if when not in WHEN:
        raise SystemExit(f"WHEN is one of {', '.join(WHEN)}, not {when!r}")
    journal = StateStore.append

    def append(
        self: StateStore, tag: ReleaseTag, actor: str, kind: EventKind, **data: Any
    ) -> Event:
        if when == "done" and kind is EventKind.STEP_DONE and data.get("step") == step:
            os.kill(os.getpid(), signal.SIGKILL)
        event = journal(self, tag, actor, kind, **data)
        if when == "started" and kind is EventKind.STEP_STARTED and data.get("step") == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return event

    StateStore.append = append  # type: ignore[method-assign]


if __name__ == "__main__":
    die_at(sys.argv[1], sys.argv[2])
    sys.exit(main(sys.argv[3:]))
