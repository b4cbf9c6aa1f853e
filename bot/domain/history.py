"""The event log's vocabulary, and the fold that turns a release's events into its state.

Current state is never stored: it is re-derived from the events (as prow re-derives approvals
from comments), so the audit trail and the state cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.domain.claims import Claim, Hold, Withdrawal
from bot.domain.files import SnapshotFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag


class EventKind(StrEnum):
    CLAIMED = "claimed"  # role, snapshot
    WITHDRAWN = "withdrawn"  # role, reason
    HELD = "held"  # reason
    UNHELD = "unheld"  # holder
    PLANNED = "planned"  # code_hash, expires_at, plan
    PLAN_DROPPED = "plan-dropped"  # reason
    CONFIRMED = "confirmed"  # code_hash, plan digest, public_before (targets already there)
    STEP_STARTED = "step-started"  # step
    STEP_DONE = "step-done"  # step, detail
    PUBLISHED = "published"  # files, size
    ABORTED = "aborted"  # reason: a publish stopped or cancelled (/abort) before anything moved
    REFUSED = "refused"  # command, reason (audit only: changes no state)


@dataclass(frozen=True)
class Event:
    id: int
    at: float
    tag: str
    actor: str
    kind: EventKind
    data: Mapping[str, Any]


@dataclass(frozen=True)
class Offer:
    """A publish plan shown to an RM, waiting for ``/publish TAG confirm CODE``."""

    person: str
    code_hash: str
    expires_at: float
    plan: PublishPlan


@dataclass
class ReleaseState:
    tag: ReleaseTag
    claims: dict[str, Claim] = field(default_factory=dict)
    withdrawals: dict[str, Withdrawal] = field(default_factory=dict)
    holds: dict[str, Hold] = field(default_factory=dict)
    offer: Offer | None = None
    spent_codes: dict[str, str] = field(default_factory=dict)  # code hash → why it is spent
    publishing: PublishPlan | None = None  # confirmed, pipeline not finished
    publisher: str | None = None
    steps_done: dict[str, str] = field(default_factory=dict)  # step → detail
    step_started: str | None = None  # the step started last and not done (a stuck publish)
    public_before: tuple[str, ...] = ()  # planned targets already public at confirmation
    published_at: float | None = None
    published_by: str | None = None

    @property
    def is_published(self) -> bool:
        return self.published_at is not None


def plan_to_json(plan: PublishPlan) -> dict[str, Any]:
    return {"digest": plan.digest, "files": [f.to_json() for f in plan.files]}


def plan_from_json(tag: ReleaseTag, data: Mapping[str, Any]) -> PublishPlan:
    return PublishPlan(tag, tuple(PlanFile.from_json(f) for f in data["files"]))


def fold(tag: ReleaseTag, events: Iterable[Event]) -> ReleaseState:
    """Replay ``tag``'s events, oldest first, into its current state."""
    state = ReleaseState(tag)
    for event in events:
        _apply(state, event)
    return state


def _apply(state: ReleaseState, event: Event) -> None:
    data = event.data
    match event.kind:
        case EventKind.CLAIMED:
            snapshot = tuple(SnapshotFile.from_json(f) for f in data["snapshot"])
            state.claims[data["role"]] = Claim(data["role"], event.actor, event.at, snapshot)
            state.withdrawals.pop(data["role"], None)
        case EventKind.WITHDRAWN:
            if state.claims.pop(data["role"], None) is not None:
                state.withdrawals[data["role"]] = Withdrawal(
                    data["role"], event.actor, data["reason"], event.at
                )
        case EventKind.HELD:
            state.holds[event.actor] = Hold(event.actor, data.get("reason", ""), event.at)
        case EventKind.UNHELD:
            state.holds.pop(data["holder"], None)
        case EventKind.PLANNED:
            _drop_offer(state, "replaced by a newer plan")
            state.offer = Offer(
                event.actor,
                data["code_hash"],
                float(data["expires_at"]),
                plan_from_json(state.tag, data["plan"]),
            )
        case EventKind.PLAN_DROPPED:
            _drop_offer(state, data.get("reason", "withdrawn"))
        case EventKind.CONFIRMED:
            if state.offer is not None:
                state.publishing = state.offer.plan
                state.publisher = event.actor
                state.public_before = tuple(data.get("public_before", ()))
            _drop_offer(state, "already used")
        case EventKind.STEP_STARTED:
            state.step_started = data["step"]
        case EventKind.STEP_DONE:
            state.steps_done[data["step"]] = data.get("detail", "")
            state.step_started = None
        case EventKind.PUBLISHED:
            state.published_at = event.at
            state.published_by = state.publisher or event.actor
        case EventKind.ABORTED:
            state.publishing, state.publisher = None, None
            state.steps_done.clear()
            state.step_started, state.public_before = None, ()
        case EventKind.REFUSED:
            pass


def _drop_offer(state: ReleaseState, why: str) -> None:
    if state.offer is not None:
        state.spent_codes[state.offer.code_hash] = why
        state.offer = None
