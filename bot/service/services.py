"""What the command handlers and the scheduled scan share: the gate's collaborators (the
observer of staging, the reporter to the channel, the publish pipeline), the per-release
locks, and the few operations more than one handler performs (re-render a summary, withdraw
claims whose files changed, build the plan ``/publish`` would offer).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from bot.config import Config
from bot.domain.files import Listing, changed_since, needs_digest
from bot.domain.history import EventKind, ReleaseState
from bot.domain.plan import PublishPlan, make_plan
from bot.domain.profile import Profile
from bot.domain.records import PydotorgSettings, planned_records, unstorable
from bot.domain.signing import sign_command
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError, RelbotError, StorageError
from bot.metrics import Metrics
from bot.ports import Journal
from bot.service import index_day
from bot.service.connections import Connections
from bot.service.follow_ups import FollowUps
from bot.service.observer import Observer, Snapshot
from bot.service.pipeline import announcing
from bot.service.pipeline.runner import Pipeline
from bot.service.pipeline.steps import BOT
from bot.service.refusals import Refusal
from bot.service.release_locks import ReleaseLocks
from bot.service.reporter import Reporter
from bot.service.signing_offer import ConfirmSigning
from bot.signing.login import Logins
from bot.team import Team

log = logging.getLogger(__name__)


class Services:
    def __init__(
        self,
        config: Config,
        store: Journal,
        conn: Connections,
        metrics: Metrics,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        settle_seconds: float,
        code_factory: Callable[[], str],
    ) -> None:
        self.config = config
        # A published release keeps the branch status it was published under (late files).
        self.pinned = pinned_statuses(store)
        self.profile = config.profile.with_pinned(self.pinned)
        self.team = Team(config.people)
        self.store, self.conn = store, conn
        self.clock = clock
        self.new_code = code_factory
        self.metrics = metrics
        self.locks = ReleaseLocks()
        self.follow_ups = FollowUps()  # what commands tell once their files are hashed
        self.logins = Logins()
        self.signing = ConfirmSigning(config, conn, self.profile, self.logins)
        self.observer = Observer(
            self.profile,
            conn,
            require_signatures=config.requires_signatures,
            sleep=sleep,
            settle_seconds=settle_seconds,
        )
        index_day.wire(self.observer, store.tags, store.release)
        self.reporter = Reporter(
            conn, store, self.team, clock=clock, poll_interval=config.model.poll_interval
        )
        self.pipeline = Pipeline(
            conn,
            store,
            self.profile,
            self.metrics,
            self.reporter,
            published=self._published,
            logins=self.logins,
            staged_changed=self._staged_changed,
        )

    def lock(self, tag: ReleaseTag) -> AbstractAsyncContextManager[None]:
        """Serializes the commands and scans of ``tag``."""
        return self.locks.hold(str(tag))

    def retained_tags(self) -> set[str]:
        """The releases anything is kept for in memory (locks, observations, hashes,
        bundles, what the channel was told): open releases only, whatever was typed."""
        kept = self.locks.keys() | self.observer.retained_tags() | self.logins.retained_tags()
        return kept | self.reporter.retained_tags()

    async def require_known(self, tag: ReleaseTag) -> None:
        """Refuse a command that would record something about a release nobody staged or
        acted on: a typo (3.14.11) would become a release kept and listed for ever."""
        if (unknown := await self.unknown_release(tag)) is not None:
            raise Refusal(unknown)

    async def unknown_release(self, tag: ReleaseTag) -> str | None:
        """The refusal of a tag the bot knows nothing of (nothing staged, nobody acted on it,
        never published), with what was probably meant; None for a release it knows."""
        if tag in self.store.open_tags() or self.store.release(tag).is_published:
            return None
        if await self.observer.list_staging(tag) is not None:
            return None
        known = {str(t) for t in self.store.open_tags()}
        for name in await self.observer.staged_tags():
            with contextlib.suppress(RelbotError):  # a folder that is not a release
                known.add(str(ReleaseTag.parse(name)))
        return f"No release {tag} is known: nothing is staged or recorded for it; " + _hint(
            str(tag), sorted(known)
        )

    async def refresh(self, tag: ReleaseTag) -> None:
        """Re-render the summary from the last listing seen. A command in the first moments
        after a start comes before the first scan of ``tag``: that look is taken now (within
        the read deadline), since a summary from no listing calls every staged file missing.
        When it cannot be taken (staging unreachable, a publish under way), the summary is
        left as it was: the command's reply and notice say what changed, the next scan
        re-renders it. A published release's summary is its headline (late files aside)."""
        state = self.store.release(tag)
        open_now = not state.is_published and state.publishing is None
        if open_now and self._listed(tag) is None:
            try:
                await self.scan_release(tag)  # the first look at tag since the start
            except StorageError as err:
                log.warning("could not look at %s for its summary: %s", tag, err)
            if self._listed(tag) is not None:
                return  # that look rendered the summary, from the state as it is now
        listing = self._listed(tag)
        if listing is None and not state.is_published:
            return  # nothing seen: never a summary that calls the staged files missing
        readiness = await self.observer.readiness(tag, listing or {}, None, state)
        await self.reporter.summary(readiness, state)
        if state.is_published:  # its last summary is shown: nothing left to observe
            self.forget(tag)

    def _listed(self, tag: ReleaseTag) -> Listing | None:
        """Staging's last listing of ``tag`` seen since the start (no I/O, keeps nothing)."""
        seen = self.observer.seen(tag)
        return seen.listing if seen is not None else None

    def forget(self, tag: ReleaseTag) -> None:
        """Drop everything kept for ``tag`` (a published release)."""
        self.observer.forget_files(tag)
        self.observer.forget(tag)
        self.reporter.forget(tag)

    async def _published(self, tag: ReleaseTag) -> None:
        state = self.store.release(tag)
        if state.branch_status is not None:
            self.pinned[str(tag)] = state.branch_status
        self.logins.forget(tag)
        self.observer.forget(tag)
        self.reporter.forget(tag)
        if self.observer.index is not None:
            self.observer.index.forget()  # the live index may have changed: judge afresh
        await self.refresh(tag)
        self.follow_ups.start(index_day.look_again(self, state))

    async def _staged_changed(self, tag: ReleaseTag, paths: list[str]) -> list[str]:
        """The bot found staged files that are not the confirmed ones when it copied them:
        withdraw the claims on them, with the reason, and hash them afresh, so that the
        role's next /ready and the next /publish see what they hold now (a rewrite that
        kept size and mtime fools every cache). Returns who made those claims."""
        state = self.store.release(tag)
        claimers = []
        for role, claim in state.claims.items():
            changed = sorted({f.path for f in claim.snapshot} & set(paths))
            if not changed:
                continue
            reason = f"{', '.join(changed)} changed after /ready (found at the confirmation)"
            self.store.append(tag, BOT, EventKind.WITHDRAWN, role=role, reason=reason)
            claimers.append(claim.person)
        try:
            listing = await asyncio.to_thread(self.conn.storage.list_staging, tag)
            present = [p for p in paths if listing and p in listing and listing[p].regular]
            if listing and present:
                await self.observer.digest(tag, listing, present, fresh=True)
        except StorageError:
            pass  # the next scan lists it again; the claims are withdrawn already
        return claimers

    async def scan_release(self, tag: ReleaseTag, snapshot: Snapshot | None = None) -> None:
        """A scan's look at one open release: list it (or take its scan's ``snapshot``),
        withdraw changed claims, check signatures and the install index, update the summary."""
        observer = self.observer
        state = self.store.release(tag)
        if state.publishing is not None:
            return
        listing = await observer.list_for_scan(state, snapshot)
        if state.is_published and not listing:
            return  # published, and no late files staged
        if listing is None:
            listing = {}
        await observer.list_public(tag, state)
        previous = observer.last_listing(tag)
        observer.sight(tag).listing = listing
        observer.sight(tag).previous = previous
        if await self.withdraw_changed_claims(tag, listing, state):
            state = self.store.release(tag)
        readiness = await observer.readiness(tag, listing, previous, state)
        readiness = await observer.check_signatures(readiness)
        readiness = await index_day.judged(observer, readiness, listing, self.reporter)
        await self.reporter.summary(readiness, state)

    async def withdraw_changed_claims(
        self, tag: ReleaseTag, listing: Listing, state: ReleaseState, *, now: bool = False
    ) -> bool:
        """Withdraw (and tell the claimer of) each claim whose files changed after
        ``/ready``; whether any was. A scan never waits for a hash: a claim whose files are
        still being hashed is decided at a later scan. ``now`` (a publish) decides every
        claim, raising ``StillHashing`` while a file is being hashed."""
        withdrew = False
        claims = state.claims.values()
        moved = sorted({path for c in claims for path in needs_digest(c.snapshot, listing)})
        if now:  # one look (one wait) for every claim's files
            digests, pending = await self.observer.digest(tag, listing, moved), set[str]()
        else:
            looked = await self.observer.look_digests(tag, listing, moved)
            digests, pending = looked.digests, set(looked.pending)
        for role, claim in state.claims.items():
            if pending & set(needs_digest(claim.snapshot, listing)):
                continue  # decided once hashed
            changed = changed_since(claim.snapshot, listing, digests)
            if not changed:
                continue
            what = ", ".join(changed)
            verb = "changed" if all(p in listing for p in changed) else "changed or disappeared"
            reason = f"{what} {verb} after /ready"
            self.store.append(tag, BOT, EventKind.WITHDRAWN, role=role, reason=reason)
            await self.reporter.notice(
                tag,
                f"The {role} claim on {tag} was withdrawn: {reason}. "
                f"{claim.person}: check the files and say /ready {role} {tag} "
                "again.",
                mentions=[claim.person],
            )
            withdrew = True
        return withdrew

    async def publishable_plan(
        self, tag: ReleaseTag, state: ReleaseState, *, fresh: bool = False
    ) -> PublishPlan:
        """Check everything ``/publish`` needs, withdrawing claims whose files changed, and
        build the plan; raises :class:`Refusal` with the blockers. ``fresh`` hashes every
        file again (at confirmation: a same-size rewrite within one mtime tick must not
        slip through)."""
        observer = self.observer
        readiness, listing = await observer.observe(tag, state, settle=True)
        if await self.withdraw_changed_claims(tag, listing, state, now=True):
            state = self.store.release(tag)
            readiness = await observer.readiness(tag, listing, observer.last_listing(tag), state)
        readiness = await index_day.judged(observer, readiness, listing)
        blockers = readiness.blockers
        if self.conn.registry is not None and not blockers:
            try:
                await asyncio.to_thread(self.conn.registry.preflight, tag)
            except RegistryError as err:
                blockers.append(f"python.org: {err}")
        if not blockers:  # the announcement's services, as python.org's: all else is fine
            blockers += await announcing.blockers(self.config, self.conn, tag, state)
        if blockers:
            text = f"{tag} cannot be published yet: " + "; ".join(blockers) + "."
            if readiness.signatures_required and readiness.invalid_signatures:
                text += f" To sign what lacks a signature, run: {self.sign_line(tag)}"
            raise Refusal(text)
        paths = [f.path for role in readiness.roles for f in role.present]
        digests = await observer.digest(tag, listing, paths, fresh=fresh)
        index = observer.sight(tag).index
        plan = make_plan(self.profile, readiness, listing, digests, index.live if index else None)
        if not plan.files:
            raise Refusal(f"Nothing new is staged for {tag}; stage the files to add first.")
        if self.conn.registry is not None and (problems := unregistrable(self.profile, plan)):
            # Refused now, while nothing is public: python.org would answer them with a 500
            # after the files are out.
            raise Refusal(f"{tag} cannot be published yet: " + "; ".join(problems) + ".")
        return announcing.with_announcement(self.config, self.conn, plan, state)

    def sign_line(self, tag: ReleaseTag) -> str:
        """The ``relbot sign`` command line that signs what ``tag`` lacks."""
        origin = self.config.origin  # a file's path, or "built-in default"
        from_file = origin != "built-in default"
        return sign_command(tag, str(self.config.path(Path(origin).name)) if from_file else None)


SHOWN = 5  # open releases named when none is close to what was typed


def _hint(typed: str, known: list[str]) -> str:
    """What was probably meant instead of the unknown tag ``typed``."""
    close = difflib.get_close_matches(typed, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]}?"
    if not known:
        return "no release is open (stage files to start one)."
    more = f" and {len(known) - SHOWN} more" if len(known) > SHOWN else ""
    return f"the open releases are {', '.join(known[:SHOWN])}{more} (/status shows them)."


def pinned_statuses(journal: Journal) -> dict[str, str]:
    """Each published release's branch status as journaled with its plan (tag → status):
    late files of 3.13.10 follow 3.13's status when 3.13.10 was published, not today's."""
    found = {}
    for tag in journal.tags():
        status = journal.release(tag).branch_status
        if status is not None:
            found[str(tag)] = status
    return found


def unregistrable(profile: Profile, plan: PublishPlan) -> list[str]:
    """Why python.org could not hold the records of ``plan``: each a sentence naming the
    file (a size or a name past its columns, two files with one URL)."""
    try:
        records = planned_records(PydotorgSettings.from_profile(profile), profile, plan)
    except RegistryError as err:
        return [f"python.org: {str(err).rstrip('.')}"]
    return [f"python.org: {problem}" for problem in unstorable(records)]
