"""The event log's vocabulary, and the fold that turns a release's events into its state.

Current state is never stored: it is re-derived from the events (as prow re-derives approvals
from comments), so the audit trail and the state cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from bot.domain.announcement import Announcement
from bot.domain.claims import Claim, Hold, Withdrawal
from bot.domain.files import SnapshotFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.domain.waivers import Waiver
from bot.domain.windows_index import INDEX_STEP, INDEX_WAITS


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
    ABORTING = "aborting"  # reason: /abort, journaled before it acts (a restart finishes it)
    STOPPED = "stopped"  # step, reason, public, files: a publish that waits for the RM
    REFUSED = "refused"  # command, reason (audit only: changes no state)
    WAIVED = "waived"  # target, role (bool), reason
    UNWAIVED = "unwaived"  # target
    ANNOUNCEMENT_WORDS = "announcement-words"  # words: the RM's part of the announcement
    SIGNED = "signed"  # identity, signed (how many), plan (the confirmed one + signatures)


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
    # Files the bot signs at the confirmation (the RM logs in to confirm), and the status of
    # the branch the plan was made under (the release cycle's, or the one journaled earlier).
    to_sign: tuple[str, ...] = ()
    status: str | None = None


@dataclass(frozen=True)
class Stop:
    """A confirmed publish that cannot go on by itself (retrying cannot help): the step it
    stopped at, why, whether anything of it is public, and the planned paths concerned
    (those a finishing confirmation leaves out)."""

    step: str
    reason: str
    public: bool
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Aborted:
    """The newest abort of a confirmed publish (``/abort``, or the bot stopping a publish
    before anything moved), until the release is confirmed again."""

    by: str
    reason: str
    at: float


@dataclass
class ReleaseState:
    tag: ReleaseTag
    claims: dict[str, Claim] = field(default_factory=dict)
    withdrawals: dict[str, Withdrawal] = field(default_factory=dict)
    delivered: dict[str, Claim] = field(default_factory=dict)  # claims spent by a publish
    holds: dict[str, Hold] = field(default_factory=dict)
    offer: Offer | None = None
    spent_codes: dict[str, str] = field(default_factory=dict)  # code hash → why it is spent
    publishing: PublishPlan | None = None  # confirmed, pipeline not finished
    publisher: str | None = None
    steps_done: dict[str, str] = field(default_factory=dict)  # step → detail
    step_started: str | None = None  # the step started last and not done (a stuck publish)
    public_before: tuple[str, ...] = ()  # planned targets already public at confirmation
    stopped: Stop | None = None  # the publish waits for the RM (see Stop)
    aborting: str | None = None  # /abort journaled, not finished (its reason)
    published_at: float | None = None
    published_by: str | None = None
    waivers: dict[str, Waiver] = field(default_factory=dict)  # target → waiver
    public_files: tuple[PlanFile, ...] = ()  # every file published so far (late ones too)
    announcement_words: str = ""  # the RM's own part of the announcement (/announce TAG TEXT)
    to_sign: tuple[str, ...] = ()  # the confirmed publish signs these before promoting
    publishing_status: str | None = None  # the branch status of the confirmed plan
    # The branch status the release was first published under: late files keep using it.
    branch_status: str | None = None
    aborted: Aborted | None = None  # the last publish was aborted (cleared by a confirmation)
    # Its installs wait for a shared install index that another release makes live: its
    # index step left the index to it (kept past later publishes of late files).
    index_waits: bool = False

    @property
    def is_published(self) -> bool:
        return self.published_at is not None

    def copy(self) -> ReleaseState:
        """A copy that folding more events into leaves this state as it is. The values in
        the containers are frozen, so copying the containers is enough."""
        containers: dict[str, Any] = {
            f.name: type(value)(value)
            for f in fields(self)
            if isinstance(value := getattr(self, f.name), dict | list | set)
        }
        return replace(self, **containers)


def plan_to_json(plan: PublishPlan) -> dict[str, Any]:
    data: dict[str, Any] = {"digest": plan.digest, "files": [f.to_json() for f in plan.files]}
    if plan.waivers:
        data["waivers"] = list(plan.waivers)
    if plan.announcement is not None:
        data["announcement"] = plan.announcement.to_json()
    if plan.index_shared_with:
        data["index_shared_with"] = list(plan.index_shared_with)
    return data


def plan_from_json(tag: ReleaseTag, data: Mapping[str, Any]) -> PublishPlan:
    files = tuple(PlanFile.from_json(f) for f in data["files"])
    announced = data.get("announcement")
    announcement = Announcement.from_json(announced) if announced is not None else None
    shared = tuple(str(t) for t in data.get("index_shared_with", ()))
    return PublishPlan(tag, files, tuple(data.get("waivers", ())), announcement, shared)


def fold(
    tag: ReleaseTag, events: Iterable[Event], *, start: ReleaseState | None = None
) -> ReleaseState:
    """Replay ``tag``'s events, oldest first, into its current state; with ``start`` (the
    fold of the events before these), continue from there, leaving ``start`` unchanged."""
    state = ReleaseState(tag) if start is None else start.copy()
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
                tuple(data.get("sign", ())),
                data.get("status"),
            )
        case EventKind.PLAN_DROPPED:
            _drop_offer(state, data.get("reason", "withdrawn"))
        case EventKind.CONFIRMED:
            if state.offer is not None and data.get("finishing") and state.publishing:
                # The RM's way out of a stopped publish: the same publish goes on with this
                # plan (some files left out, or a re-staged index) from where it stopped.
                state.publishing = state.offer.plan
                state.publisher = event.actor
                state.stopped = None
            elif state.offer is not None:
                state.publishing = state.offer.plan
                state.publisher = event.actor
                state.steps_done.clear()  # a late publish runs the pipeline again
                state.public_before = tuple(data.get("public_before", ()))
                state.to_sign = state.offer.to_sign
                state.publishing_status = state.offer.status
                state.stopped, state.aborting = None, None
                state.aborted = None
            _drop_offer(state, "already used")
        case EventKind.STEP_STARTED:
            state.step_started = data["step"]
        case EventKind.STEP_DONE:
            state.steps_done[data["step"]] = data.get("detail", "")
            state.step_started = None
            if data["step"] == INDEX_STEP:  # a late index that went live ends the wait
                state.index_waits = str(data.get("detail", "")).startswith(INDEX_WAITS)
        case EventKind.STOPPED:
            state.stopped = Stop(
                data["step"],
                data["reason"],
                bool(data.get("public", False)),
                tuple(data.get("files", ())),
            )
        case EventKind.ABORTING:
            state.aborting = str(data.get("reason", ""))
        case EventKind.PUBLISHED:
            state.stopped = None
            if state.published_at is None:  # the first publish; later ones add late files
                state.published_at = event.at
                state.published_by = state.publisher or event.actor
            if state.publishing is not None:
                state.public_files += state.publishing.files
            if state.branch_status is None:
                state.branch_status = state.publishing_status
            state.publishing, state.publisher = None, None
            state.to_sign, state.publishing_status = (), None
            state.delivered.update(state.claims)
            state.claims.clear()  # spent: late files need a new /ready
            state.withdrawals.clear()
        case EventKind.SIGNED:
            if state.publishing is not None:  # the signatures join what is published
                state.publishing = plan_from_json(state.tag, data["plan"])
        case EventKind.ABORTED:
            state.publishing, state.publisher = None, None
            state.to_sign, state.publishing_status = (), None
            state.steps_done.clear()
            state.step_started, state.public_before = None, ()
            state.stopped, state.aborting = None, None
            state.aborted = Aborted(event.actor, str(data.get("reason", "")), event.at)
        case EventKind.WAIVED:
            state.waivers[data["target"]] = Waiver(
                data["target"], bool(data["role"]), event.actor, data.get("reason", ""), event.at
            )
        case EventKind.UNWAIVED:
            state.waivers.pop(data["target"], None)
        case EventKind.ANNOUNCEMENT_WORDS:
            state.announcement_words = str(data["words"])
        # REFUSED is audit only: it changes no state.


def _drop_offer(state: ReleaseState, why: str) -> None:
    if state.offer is not None:
        state.spent_codes[state.offer.code_hash] = why
        state.offer = None
