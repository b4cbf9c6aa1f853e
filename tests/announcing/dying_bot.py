"""A bot that dies at one moment of the publish pipeline: at ``started`` of a step (just after
its start is journaled: nothing of the step done) or at ``done`` (the step's work done, just
before it is journaled as done: for ``announce``, between the post and the journal).

``python -m tests.announcing.dying_bot WHEN STEP relbot-args…`` runs ``relbot`` that kills
itself there with SIGKILL, as the kernel's OOM killer would: no handler runs, nothing
buffered is written, the journal is left as it was at that moment. In-process tests use
:func:`dying` with an exception that nothing in the bot catches (:class:`Died`)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from bot.domain.history import Event, EventKind
from bot.domain.tags import ReleaseTag
from bot.service.pipeline.steps import PIPELINE

WHEN = ("started", "done")
# Every moment of a publish without signing (the sign step runs only with a login).
MOMENTS = [(when, step) for step in PIPELINE for when in WHEN]


class Append(Protocol):
    def __call__(self, tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Event: ...


class Died(BaseException):
    """The bot died here. A BaseException, as no ``except Exception`` may survive it."""


def dying(append: Append, when: str, step: str, die: Callable[[], NoReturn]) -> Append:
    """``append`` (a journal's) that calls ``die`` at ``when`` of ``step``."""
    if when not in WHEN:
        raise ValueError(f"WHEN is one of {', '.join(WHEN)}, not {when!r}")

    def journal(tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Event:
        if when == "done" and kind is EventKind.STEP_DONE and data.get("step") == step:
            die()
        event = append(tag, actor, kind, **data)
        if when == "started" and kind is EventKind.STEP_STARTED and data.get("step") == step:
            die()
        return event

    return journal


def died() -> NoReturn:
    raise Died


def sigkill() -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("still alive after SIGKILL")


if __name__ == "__main__":
    from bot.cli import main
    from bot.journal.store import StateStore

    journal = StateStore.append
    when, step = sys.argv[1], sys.argv[2]

    def append(
        self: StateStore, tag: ReleaseTag, actor: str, kind: EventKind, **data: Any
    ) -> Event:
        def this(tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Event:
            return journal(self, tag, actor, kind, **data)

        return dying(this, when, step, sigkill)(tag, actor, kind, **data)

    StateStore.append = append  # type: ignore[method-assign]
    sys.exit(main(sys.argv[3:]))
