"""The release board's view of one release: what its page and its JSON show, built from what
the gate last observed and from the event log. Pure: no I/O, no clock (``now`` is passed in).

The JSON (:meth:`ReleaseView.to_json`) is a contract the release automation waits on: fields
are only ever added, never renamed or removed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import quote

from bot.domain.history import Event, EventKind, ReleaseState
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import Profile
from bot.domain.readiness import Readiness, RoleReadiness
from bot.domain.records import PydotorgSettings
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError
from bot.service.gate import Observed
from bot.service.render import count, event_detail, role_line, when

TIMELINE_LIMIT = 200  # newest events shown; `relbot audit TAG` has them all
FILES_SHOWN = 300  # the roles' first, then stray ones: a page stays small (the rest is counted)


class RoleState(StrEnum):
    READY = "ready"  # someone said /ready and the files still match
    COMPLETE = "complete"  # every required file is staged, nobody said /ready yet
    INCOMPLETE = "incomplete"  # a required file is missing, uploading, empty or bad
    WITHDRAWN = "withdrawn"  # complete again, but the last claim was withdrawn
    WAIVED = "waived"  # the RM waived the role for this release


@dataclass(frozen=True)
class RoleView:
    role: str
    state: RoleState
    by: str | None  # who said /ready (ready), withdrew (withdrawn) or waived (waived)
    at: float | None
    detail: str


@dataclass(frozen=True)
class FileView:
    """One file of the release: staged, expected but missing, or published."""

    path: str  # relative to the release's staging folder
    role: str | None  # None for a file no role may stage
    status: str  # present, missing, uploading, empty, unexpected, …, publishing, published
    required: bool
    size: int | None
    sha256: str | None  # None until the bot has hashed the file as it is now
    signature: str | None  # valid, missing, invalid; None when not checked
    signature_reason: str
    target: str | None  # where it goes, relative to the public root; None: never published
    url: str | None = None  # where python.org serves it, once published


@dataclass(frozen=True)
class NoteView:
    """A hold or a waiver: who, why, when (``subject`` is the waived PATH or ROLE)."""

    by: str
    reason: str
    at: float
    subject: str = ""


@dataclass(frozen=True)
class PlanView:
    """The plan an RM was shown (never its code), or the one being or already published."""

    stage: str  # offered, expired, publishing, published
    by: str
    files: int
    size: int
    digest: str
    folders: tuple[str, ...]
    expires_at: float | None = None
    steps_done: tuple[str, ...] = ()


@dataclass(frozen=True)
class AbortView:
    """The newest abort of a confirmed publish (``/abort``, or the bot stopping a publish
    before anything moved): ``event`` is its id in the log, to compare with ``last_event``."""

    event: int
    by: str
    reason: str
    at: float


@dataclass(frozen=True)
class EventView:
    at: float
    actor: str
    kind: str
    detail: str


@dataclass(frozen=True)
class ReleaseView:
    tag: str
    published: bool
    publishing: bool
    blockers: tuple[str, ...]  # why /publish would refuse; empty when it would offer a plan
    #                            and once published (nothing is left to block)
    roles: tuple[RoleView, ...]
    files: tuple[FileView, ...]
    holds: tuple[NoteView, ...]
    waivers: tuple[NoteView, ...]
    plan: PlanView | None
    timeline: tuple[EventView, ...]  # newest first, at most TIMELINE_LIMIT
    events: int  # how many events the log holds for the release
    listed: bool  # whether staging was listed (False before the first scan after a start)
    published_at: float | None = None
    published_by: str | None = None
    signatures_required: bool = False
    last_event: int = 0  # the id of the release's newest event (0: none): a cursor
    aborted: AbortView | None = None
    files_not_shown: int = 0  # entries past FILES_SHOWN, counted only (at least 1 when cut)
    cut: bool = False  # staging holds more entries than the bot lists
    links: tuple[tuple[str, str], ...] = ()  # (label, URL) of the published release

    @property
    def publishable(self) -> bool:
        return not self.published and not self.blockers

    @property
    def ready(self) -> bool:
        """Every role the release requires is ``ready`` or ``waived`` (what ``relbot wait
        --until ready`` waits for); files, holds and signatures are ``publishable``'s."""
        return all(r.state in (RoleState.READY, RoleState.WAIVED) for r in self.roles)

    @property
    def headline(self) -> str:
        """One sentence: published, publishing, publishable, or how much blocks it."""
        if self.published and self.published_at is not None:
            return f"Published by {self.published_by} at {when(self.published_at)}."
        if self.publishing:
            who = self.plan.by if self.plan else "the release manager"
            return f"Publishing now (confirmed by {who})."
        if self.publishable:
            return f"Publishable: the release manager can say /publish {self.tag}."
        n = len(self.blockers)
        return f"Not publishable yet: {n} {'thing blocks' if n == 1 else 'things block'} it."

    def to_json(self) -> dict[str, Any]:
        """The JSON of ``GET /api/releases/TAG`` (times are ISO 8601 UTC strings)."""
        return {
            "tag": self.tag,
            "published": self.published,
            "publishable": self.publishable,
            "publishing": self.publishing,
            "published_at": _iso(self.published_at),
            "published_by": self.published_by,
            "headline": self.headline,
            "blockers": list(self.blockers),
            "links": dict(self.links),
            "roles": {
                r.role: {"state": r.state.value, "by": r.by, "at": _iso(r.at), "detail": r.detail}
                for r in self.roles
            },
            "files": [
                {
                    "path": f.path,
                    "role": f.role,
                    "size": f.size,
                    "sha256": f.sha256,
                    "status": f.status,
                    "required": f.required,
                    "signature": f.signature,
                    "target": f.target,
                    "url": f.url,
                }
                for f in self.files
            ],
            "files_not_shown": self.files_not_shown,
            "listing_cut": self.cut,
            "signatures_required": self.signatures_required,
            "holds": [{"by": h.by, "reason": h.reason, "at": _iso(h.at)} for h in self.holds],
            "waivers": [
                {"subject": w.subject, "by": w.by, "reason": w.reason, "at": _iso(w.at)}
                for w in self.waivers
            ],
            "plan": None if self.plan is None else _plan_json(self.plan),
            "timeline": [
                {"at": _iso(e.at), "actor": e.actor, "kind": e.kind, "detail": e.detail}
                for e in self.timeline
            ],
            "ready": self.ready,
            "listed": self.listed,
            "last_event": self.last_event,
            "aborted": None if self.aborted is None else _abort_json(self.aborted),
        }


def release_view(
    profile: Profile,
    tag: ReleaseTag,
    observed: Observed,
    events: Sequence[Event],
    *,
    now: float,
    signatures_required: bool = False,
) -> ReleaseView:
    """The board's view of ``tag`` from the gate's last observation and its events."""
    state, readiness = observed.state, observed.readiness
    published = state.is_published and state.publishing is None
    cut = readiness is not None and readiness.cut
    if readiness is not None:
        roles = tuple(_role_view(r, str(tag)) for r in readiness.roles)
        files = _staged_files(profile, readiness, observed)
        total = sum(len(r.files) for r in readiness.roles) + len(readiness.stray)
    else:
        roles = tuple(_role_from_state(role, state) for role in profile.roles_for(tag))
        files = _planned_files(state, _files_url(profile) if published else None)
        total = len(files)
    newest = tuple(
        EventView(e.at, e.actor, e.kind.value, event_detail(e))
        for e in reversed(events[-TIMELINE_LIMIT:])
    )
    return ReleaseView(
        tag=str(tag),
        published=state.is_published,
        publishing=state.publishing is not None and not state.is_published,
        blockers=() if published else observed.blockers,
        roles=roles,
        files=files[:FILES_SHOWN],
        holds=tuple(NoteView(h.person, h.reason, h.at) for h in state.holds.values()),
        waivers=_waivers(state),
        plan=_plan_view(state, now),
        timeline=newest,
        events=len(events),
        listed=readiness is not None,
        published_at=state.published_at,
        published_by=state.published_by,
        signatures_required=signatures_required,
        last_event=events[-1].id if events else 0,
        aborted=_last_abort(events),
        files_not_shown=max(0, total - FILES_SHOWN) or int(cut),  # a cut one left some out
        cut=cut,
        links=tuple(profile.links(tag).items()) if published else (),
    )


def _last_abort(events: Sequence[Event]) -> AbortView | None:
    """The newest abort in ``events`` (oldest first), if any."""
    for event in reversed(events):
        if event.kind is EventKind.ABORTED:
            return AbortView(event.id, event.actor, str(event.data.get("reason", "")), event.at)
    return None


def _abort_json(abort: AbortView) -> dict[str, Any]:
    return {"event": abort.event, "by": abort.by, "reason": abort.reason, "at": _iso(abort.at)}


def _waivers(state: ReleaseState) -> tuple[NoteView, ...]:
    """The release's waivers (``/waive TAG PATH|ROLE``)."""
    return tuple(
        NoteView(w.person, w.reason, w.at, subject=w.target) for w in state.waivers.values()
    )


def _role_view(role: RoleReadiness, tag: str) -> RoleView:
    word, detail = role_line(role, tag)  # the summary's own words, so both always agree
    if word == "public":  # every file of the role was published earlier: delivered
        return RoleView(role.role, RoleState.READY, None, None, detail)
    state = RoleState(word)
    if state is RoleState.READY and role.claim is not None:
        return RoleView(role.role, state, role.claim.person, role.claim.at, detail)
    if state is RoleState.WITHDRAWN and role.withdrawal is not None:
        return RoleView(role.role, state, role.withdrawal.by, role.withdrawal.at, detail)
    return RoleView(role.role, state, None, None, detail)


def _role_from_state(role: str, state: ReleaseState) -> RoleView:
    """A role of a release whose staging the bot is not looking at (published, publishing,
    or not listed since the start): what the log says."""
    waiver = state.waivers.get(role)
    if waiver is not None and waiver.is_role and role not in state.claims:
        return RoleView(role, RoleState.WAIVED, waiver.person, waiver.at, waiver.reason)
    claim = state.claims.get(role) or state.delivered.get(role)
    if claim is not None:
        claimed = f"{count(len(claim.snapshot), 'file')} claimed"
        return RoleView(role, RoleState.READY, claim.person, claim.at, claimed)
    withdrawal = state.withdrawals.get(role)
    if withdrawal is not None:
        return RoleView(role, RoleState.WITHDRAWN, withdrawal.by, withdrawal.at, withdrawal.reason)
    return RoleView(role, RoleState.INCOMPLETE, None, None, "staging not listed yet")


def _staged_files(
    profile: Profile, readiness: Readiness, observed: Observed
) -> tuple[FileView, ...]:
    verdicts = {s.path: s for s in readiness.signatures}
    files = []
    for role in readiness.roles:
        for f in role.files:
            verdict = verdicts.get(f.path)
            files.append(
                FileView(
                    path=f.path,
                    role=role.role,
                    status=f.status.value,
                    required=f.required,
                    size=f.size,
                    sha256=observed.digests.get(f.path),
                    signature=verdict.status.value if verdict else None,
                    signature_reason=verdict.reason if verdict else "",
                    target=profile.public_target(readiness.tag, role.role, f.path),
                )
            )
    for f in readiness.stray[: max(0, FILES_SHOWN - len(files))]:
        digest = observed.digests.get(f.path)
        files.append(FileView(f.path, None, f.status.value, False, f.size, digest, None, "", None))
    return tuple(files)


def _last_plan(state: ReleaseState) -> PublishPlan | None:
    """The plan being published, or for a published release every file made public (not
    the install index while it waits for a release it is shared with)."""
    if state.publishing is not None:
        return state.publishing
    if state.is_published:
        waiting = state.index_waits
        public = tuple(f for f in state.public_files if not (waiting and f.is_replacement))
        return PublishPlan(state.tag, public)
    return None


def _planned_files(state: ReleaseState, files_url: str | None) -> tuple[FileView, ...]:
    """The files being or already published; ``files_url``: where the public ones are
    served (None while publishing)."""
    plan = _last_plan(state)
    if plan is None:
        return ()
    status = "published" if state.is_published else "publishing"

    def _url(f: PlanFile) -> str | None:
        return files_url + quote(f.target) if files_url else None

    return tuple(
        FileView(f.path, f.role, status, True, f.size, f.sha256, None, "", f.target, url=_url(f))
        for f in plan.files
    )


def _files_url(profile: Profile) -> str | None:
    """Where python.org serves the public folder: the URL its release database records for
    each file (the profile's ``[pydotorg] files_url``); None when the profile has none."""
    try:
        return PydotorgSettings.from_profile(profile).files_url
    except ConfigError:
        return None


def _plan_view(state: ReleaseState, now: float) -> PlanView | None:
    last = _last_plan(state)
    if last is not None:
        plan, by = last, state.publisher or state.published_by or ""
        stage = "publishing" if state.publishing is not None else "published"
        expires, steps = None, tuple(state.steps_done)
    elif state.offer is not None:
        plan, by = state.offer.plan, state.offer.person
        stage = "offered" if now <= state.offer.expires_at else "expired"
        expires, steps = state.offer.expires_at, ()
    else:
        return None
    folders = tuple(sorted({f.target.rsplit("/", 1)[0] + "/" for f in plan.files}))
    return PlanView(
        stage, by, len(plan.files), plan.total_size, plan.digest, folders, expires, steps
    )


def _plan_json(plan: PlanView) -> dict[str, Any]:
    return {
        "stage": plan.stage,
        "by": plan.by,
        "files": plan.files,
        "size": plan.size,
        "digest": plan.digest,
        "folders": list(plan.folders),
        "expires_at": _iso(plan.expires_at),
        "steps_done": list(plan.steps_done),
    }


def _iso(at: float | None) -> str | None:
    return None if at is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
