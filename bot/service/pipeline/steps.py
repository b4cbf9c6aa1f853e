"""The publish pipeline after a confirmation: freeze → (sign) → promote → (index) → register →
purge → downloads → release-page → discourse → announce → tidy. The sign step runs when the
RM confirmed with a login (:mod:`bot.service.pipeline.sign`); the three before the channel's
announcement are in :mod:`bot.service.pipeline.announcing`.

Each step is an object with a name and an idempotent ``run``; the pipeline journals a step as
started once and as done with its detail, so a restart resumes where a crash stopped and
nothing happens twice. Steps are found by name (:data:`PIPELINE`, plus the index step when
the plan replaces live files: ``bot.service.windows_index.pipeline_for``, and the sign step after
the freeze when the RM confirmed with a login).

A step that fails leaves the publish in exactly one of these states, each told to the channel
once, in the same words wherever it is shown (the notice, the confirm reply, ``/status``, a
refused command):

- **waiting**: a cause that goes away (the server unreachable, a full disk, a folder the bot
  cannot write): retried on every scan; it resumes by itself once the cause is fixed.
- **stopped**: retrying cannot help (the bot's copies or its work folder are not what it
  made, a public file is not the bot's, the live index changed): journaled, never retried,
  with one way out for the RM: ``/abort TAG`` while nothing is public, else ``/publish TAG``
  to finish without the files concerned (or with a re-staged index).
- **aborted by itself**: nothing is public and the confirmed bytes cannot be published (a
  staged file changed before the bot copied it, a public file in the way, signing failed):
  the claims on changed files are withdrawn and ``/publish`` works again.

``/abort`` is journaled before it acts, and a restart finishes an abort, never the publish.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol

from bot.domain import late
from bot.domain.history import EventKind, ReleaseState, Stop
from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.domain.text import listing
from bot.errors import (
    PromotionConflict,
    PublishStopped,
    RelbotError,
    StagedChanged,
    StateWriteError,
    StorageError,
)
from bot.metrics import Metrics
from bot.ports import Journal
from bot.ports.messages import ChannelKind, ChannelMessage
from bot.service import windows_index
from bot.service.connections import Connections
from bot.service.pipeline import announcing, sign
from bot.service.refusals import Refusal
from bot.service.release_locks import ReleaseLocks
from bot.service.render import size_text
from bot.service.reporter import Reporter
from bot.service.stops import stop_text
from bot.service.while_publishing import public_folders
from bot.signing.login import Logins

log = logging.getLogger(__name__)

BOT = "relbot"  # the actor of events the bot causes itself (a step, a withdrawn claim)
PIPELINE = ("freeze", "promote", "register", "purge", *announcing.STEPS, "announce", "tidy")

# Called when the freeze found staged files that are not the confirmed ones: withdraws the
# claims on them; returns the people to tell (whoever claimed them).
StagedChangedHook = Callable[[ReleaseTag, list[str]], Awaitable[list[str]]]


@dataclass(frozen=True)
class Run:
    """One attempt at one step: the plan, and the release as journaled before it."""

    plan: PublishPlan
    state: ReleaseState


@dataclass(frozen=True)
class Outcome:
    """How a run of the pipeline ended: published, or not (``text``: what the channel was
    told, the same words every message uses); ``aborted`` when it undid itself."""

    published: bool
    text: str = ""
    aborted: bool = False


class Step(Protocol):
    name: str

    async def run(self, run: Run) -> str:
        """Do the step (again: it is idempotent); the detail journaled with it. Raises
        ``RelbotError`` or ``OSError`` when it cannot be done now."""
        ...


class Freeze:
    """The bot's own copy of every confirmed file, hashed as it is made; a staged file that
    is not the confirmed one any more aborts the publish (nothing of it is public)."""

    name = "freeze"

    def __init__(self, conn: Connections) -> None:
        self._conn = conn

    async def run(self, run: Run) -> str:
        # A first attempt drops what an earlier confirmation of the tag left; a resumed one
        # keeps the copies already made.
        fresh = run.state.step_started != self.name
        problems = await asyncio.to_thread(
            functools.partial(self._conn.storage.freeze, run.plan, fresh=fresh)
        )
        if problems:
            paths = [
                f.path for f in run.plan.files if any(p.startswith(f"{f.path} ") for p in problems)
            ]
            raise StagedChanged(tuple(problems), tuple(paths))
        return f"{len(run.plan.files)} files copied and hashed"


class Promote:
    """Make the bot's copies public, then check public against what the bot wrote."""

    name = "promote"

    def __init__(self, conn: Connections, metrics: Metrics) -> None:
        self._conn = conn
        self._metrics = metrics
        self._public_locks = ReleaseLocks()  # per public folder: one promotion; kept while used

    async def run(self, run: Run) -> str:
        plan, storage = run.plan.promoted, self._conn.storage
        async with contextlib.AsyncExitStack() as stack:
            # Two tags sharing a public folder (3.14.0rc1, rc2 → 3.14.0/) never promote at
            # once: each conflict check must see the other's files.
            for folder in public_folders(plan):
                await stack.enter_async_context(self._public_locks.hold(folder))
            report = await asyncio.to_thread(
                functools.partial(storage.promote, plan, public_before=run.state.public_before)
            )
        if report.problems:
            self._metrics.public_mismatches += 1
            files = tuple(
                f.path
                for f in plan.files
                if any(p.startswith(f"{f.target} ") for p in report.problems)
            )
            problems = listing(list(report.problems))
            raise PublishStopped(
                f"after the move, public files are not the bot's copies ({problems}); they "
                "are not registered or announced.",
                files,
            )
        return (
            f"{len(report.renamed)} folders renamed, {report.moved} files moved, "
            f"{report.already} already public"
        )


class SwapIndex:
    """Replace the live install index with the release's (a compare-and-swap)."""

    name = windows_index.INDEX_STEP

    def __init__(self, conn: Connections) -> None:
        self._conn = conn

    async def run(self, run: Run) -> str:
        return await asyncio.to_thread(windows_index.swap, self._conn.storage, run.plan)


class Register:
    """Make python.org's records match every public file of the release."""

    name = "register"

    def __init__(self, conn: Connections) -> None:
        self._conn = conn

    async def run(self, run: Run) -> str:
        registry = self._conn.registry
        if registry is None:
            return "no release database configured"
        # By difference: the records of files published earlier must stay (late files).
        everything = replace(run.plan, files=run.state.public_files + run.plan.files)
        synced = await asyncio.to_thread(registry.sync, everything)
        return (
            f"{synced.created} created, {synced.replaced} replaced, "
            f"{synced.deleted} deleted, {synced.unchanged} unchanged"
        )


class Purge:
    """Ask the CDN to forget its copies; a failure is told, never retried (pages expire)."""

    name = "purge"

    def __init__(self, conn: Connections, reporter: Reporter) -> None:
        self._conn = conn
        self._reporter = reporter

    async def run(self, run: Run) -> str:
        purger, plan = self._conn.purger, run.plan
        if purger is None:
            return "no CDN configured"
        replaced = [f.target for f in plan.replacements]  # the install index
        purged = await asyncio.to_thread(purger.purge, plan.tag, replaced)
        if purged.failed:
            failed = "; ".join(str(f) for f in purged.failed[:5])
            await self._reporter.notice(
                plan.tag,
                f"The CDN purge of {plan.tag} failed for {len(purged.failed)} URLs "
                f"({failed}); the files are public, stale pages expire on their own.",
            )
        return f"{len(purged.purged)} URLs purged, {len(purged.failed)} failed"


class Announce:
    """Tell the channel the release (or its late files) is public."""

    name = "announce"

    def __init__(self, conn: Connections, profile: Profile, store: Journal) -> None:
        self._conn = conn
        self._profile = profile
        self._store = store

    async def run(self, run: Run) -> str:
        plan, state = run.plan, run.state
        # The forum topic, as journaled by its step (in this run, or before a restart).
        posted = announcing.links(self._store.release(plan.tag))
        links, by = {**self._profile.links(plan.tag), **posted}, state.publisher or BOT
        text = (
            late.announcement(plan, by, links)
            if state.public_files
            else announcement(plan, by, links)
        )
        await self._conn.chat.post(ChannelMessage(ChannelKind.ANNOUNCEMENT, str(plan.tag), text))
        return "announced"


class Tidy:
    """Remove the staged originals the release was copied from (those still exactly what the
    bot copied) and the bot's copies; a changed original is left in staging and named."""

    name = "tidy"

    def __init__(self, conn: Connections, reporter: Reporter) -> None:
        self._conn = conn
        self._reporter = reporter

    async def run(self, run: Run) -> str:
        plan = run.plan
        try:
            left = await asyncio.to_thread(self._conn.storage.tidy, plan)
        except PublishStopped as err:  # the work folder is not the bot's: touch nothing
            await self._reporter.notice(
                plan.tag, f"{plan.tag} is published, but staging was left as it is: {err}"
            )
            return f"staging left as it is: {err}"
        if not left:
            return "staged originals removed"
        them = "it" if len(left) == 1 else "them"
        await self._reporter.notice(
            plan.tag,
            f"{listing(left)} changed in staging after /publish {plan.tag} was confirmed, so "
            f"{'it was' if len(left) == 1 else 'they were'} left there: what is public is "
            f"the confirmed file. Remove {them} from staging (under another name, {them} "
            "can be published later as late files).",
            mentions=who(run.state.publisher),
        )
        return f"staged originals removed, {len(left)} left: changed since the confirmation"


class Pipeline:
    def __init__(
        self,
        conn: Connections,
        store: Journal,
        profile: Profile,
        metrics: Metrics,
        reporter: Reporter,
        *,
        published: Callable[[ReleaseTag], Awaitable[None]],
        staged_changed: StagedChangedHook | None = None,
        logins: Logins | None = None,
    ) -> None:
        self._conn = conn
        self._store = store
        self._metrics = metrics
        self._reporter = reporter
        self._published = published  # called once the PUBLISHED event is journaled
        self._staged_changed = staged_changed
        steps: list[Step] = [
            Freeze(conn),
            sign.Sign(conn, store, profile, logins or Logins(), actor=BOT),
            Promote(conn, metrics),
            SwapIndex(conn),
            Register(conn),
            Purge(conn, reporter),
            announcing.CheckDownloads(conn, metrics),
            announcing.PublishReleasePage(conn, reporter),
            announcing.PostAnnouncement(conn),
            Announce(conn, profile, store),
            Tidy(conn, reporter),
        ]
        self.steps = {step.name: step for step in steps}

    async def run(self, state: ReleaseState) -> Outcome:
        """Run the confirmed publish of ``state`` from the first step not done (or finish
        its journaled ``/abort``). A stopped publish is not run again: it waits for the RM."""
        plan, tag = state.publishing, state.tag
        assert plan is not None
        if state.aborting is not None:
            return Outcome(False, await self.abort(state, BOT), aborted=True)
        if state.stopped is not None:
            text = stop_text(tag, state.stopped)
            self._reporter.remember_trouble(tag, text)  # told when it stopped
            return Outcome(False, text)
        if trouble := await self._reporter.storage_trouble():
            return Outcome(False, trouble)  # another bot holds the storage: told once
        names = windows_index.pipeline_for(plan, PIPELINE)
        if state.to_sign:  # confirmed with a login: the bot's copies are signed first
            names = (names[0], sign.NAME, *names[1:])
        try:
            for name in names:
                if name in state.steps_done:
                    continue
                if state.step_started != name:
                    self._store.append(tag, BOT, EventKind.STEP_STARTED, step=name)
                try:
                    detail = await self.steps[name].run(Run(plan, state))
                except StagedChanged as err:
                    return await self._undo(state, err, withdraw=list(err.paths))
                except sign.SigningFailed as err:
                    self._metrics.publish_failures += 1
                    text = await sign.call_off(
                        self._conn, self._store, self._reporter, state, err, actor=BOT
                    )
                    return Outcome(False, text, aborted=True)
                except PromotionConflict as err:
                    if not err.moved and not await self._public_or_unknown(state):
                        return await self._undo(state, err)
                    files = [f.path for f in plan.files if f.target == err.target]
                    return await self._stop(state, name, PublishStopped(str(err), tuple(files)))
                except PublishStopped as err:
                    return await self._stop(state, name, err)
                except StateWriteError:
                    raise
                except (RelbotError, OSError) as err:
                    return await self._wait(state, name, err)
                self._store.append(tag, BOT, EventKind.STEP_DONE, step=name, detail=detail)
                state = self._store.release(tag)  # a step may add to the plan (signatures)
                assert state.publishing is not None
                plan = state.publishing
            self._store.append(
                tag, BOT, EventKind.PUBLISHED, files=len(plan.files), size=plan.total_size
            )
        except StateWriteError as err:
            text = (
                f"Publishing {tag} waits: {err} Nothing more happens until the state file "
                "can be written again; then it resumes by itself."
            )
            await self._reporter.publish_stopped(tag, text, who(state.publisher))
            return Outcome(False, text)
        self._metrics.publishes += 1
        await self._published(tag)
        return Outcome(True)

    async def _wait(self, state: ReleaseState, step: str, err: RelbotError | OSError) -> Outcome:
        """A cause that goes away: retried on every scan, told (and logged) once."""
        tag = state.tag
        self._metrics.publish_failures += 1
        reason = err if isinstance(err, RelbotError) else f"{err.strerror or err}."
        if step == "freeze":
            out = f"; /abort {tag} cancels it (nothing of it is public)"
        elif step == "promote":
            out = f"; /abort {tag} cancels it while nothing of it is public"
        else:
            out = ""
        text = (
            f"Publishing {tag} stopped at {step}: {reason} It resumes by itself once that "
            f"is fixed{out}."
        )
        if await self._reporter.publish_stopped(tag, text, who(state.publisher)):
            log.warning("publish of %s stopped at %s: %s", tag, step, reason)
        return Outcome(False, text)

    async def _stop(self, state: ReleaseState, step: str, err: PublishStopped) -> Outcome:
        """Retrying cannot help: journal the stop, tell it once; the RM has one way out."""
        tag = state.tag
        self._metrics.publish_failures += 1
        public = step not in ("freeze", "promote") or await self._public_or_unknown(state)
        stop = Stop(step, str(err), public, err.files)
        self._store.append(
            tag,
            BOT,
            EventKind.STOPPED,
            step=step,
            reason=stop.reason,
            public=public,
            files=list(stop.files),
        )
        text = stop_text(tag, stop)
        log.warning("%s", text)
        await self._reporter.publish_stopped(tag, text, who(state.publisher))
        return Outcome(False, text)

    async def _undo(
        self, state: ReleaseState, err: StorageError, *, withdraw: list[str] | None = None
    ) -> Outcome:
        """Nothing of the publish is public and it cannot be what was confirmed: drop the
        bot's copies and abort it; claims on changed files are withdrawn."""
        tag = state.tag
        with contextlib.suppress(StorageError):  # copies left behind are dropped next time
            await asyncio.to_thread(self._conn.storage.discard, tag)
        self._store.append(tag, BOT, EventKind.ABORTED, reason=str(err))
        mentions = who(state.publisher)
        if withdraw is None:
            text = (
                f"Publishing {tag} was stopped before anything moved: {err} Nothing was made "
                f"public and staging is as it was; /publish {tag} works again once that is "
                "sorted out."
            )
        else:
            claimers = await self._staged_changed(tag, withdraw) if self._staged_changed else []
            mentions += [p for p in claimers if p not in mentions]
            text = (
                f"Publishing {tag} was stopped before anything moved: {err}, so the confirmed "
                "files cannot be had. Nothing was made public; the claims on those files "
                f"were withdrawn: say /ready again once they are right, then /publish {tag}."
            )
        self._reporter.clear_trouble(tag)
        await self._reporter.notice(tag, text, mentions=mentions)
        return Outcome(False, text, aborted=True)

    async def abort(self, state: ReleaseState, person: str) -> str:
        """Finish a journaled ``/abort``: drop the bot's copies (staging was never touched)
        and record the publish as aborted; returns what the RM is told."""
        tag = state.tag
        kept = ""
        try:
            await asyncio.to_thread(self._conn.storage.discard, tag)
        except PublishStopped as err:  # never touch a folder that is not the bot's
            kept = f" The bot's copies were not removed: {err}"
        reason = state.aborting or f"aborted by {person} with /abort"
        self._store.append(tag, person, EventKind.ABORTED, reason=reason)
        self._reporter.clear_trouble(tag)
        await self._reporter.notice(
            tag, f"The publish of {tag} was aborted ({reason}); nothing was made public."
        )
        return (
            f"Publishing {tag} was aborted: nothing was made public, and staging holds the "
            f"files as the uploaders left them (the bot only copied them).{kept} Claims are "
            f"unchanged and /publish {tag} works again."
        )

    async def made_public(self, state: ReleaseState) -> list[str]:
        """Planned targets this publish has made public (those public before do not count).
        Raises :class:`Refusal` when storage cannot tell."""
        assert state.publishing is not None
        if "promote" in state.steps_done:
            return [f.target for f in state.publishing.files]
        try:
            present = await asyncio.to_thread(self._conn.storage.in_public, state.publishing)
        except StorageError as err:
            raise Refusal(f"Cannot tell what is public yet: {err}") from err
        before = set(state.public_before)
        return [t for t in present if t not in before]

    async def _public_or_unknown(self, state: ReleaseState) -> bool:
        """When storage cannot tell, assume something is: an abort must never half-undo."""
        try:
            return bool(await self.made_public(state))
        except Refusal:
            return True


def who(person: str | None) -> list[str]:
    """The people to mention about a publish: its publisher, unless that is the bot."""
    return [person] if person and person != BOT else []


def announcement(plan: PublishPlan, publisher: str, links: dict[str, str]) -> str:
    """What the channel is told when a release is public."""
    parts = ", ".join(f"{role} {len(files)}" for role, files in plan.by_role().items())
    where = "".join(f" {label.capitalize()}: {url}" for label, url in links.items())
    return (
        f"{plan.tag} is published: {len(plan.files)} files ({parts}; "
        f"{size_text(plan.total_size)}), confirmed by {publisher}.{where}"
    )
