"""The publish pipeline: (sign) → promote → (index) → register → purge → downloads →
release-page → discourse → announce, after a confirmation. The sign step runs when the RM
confirmed with a login; the three before the channel's announcement are in
:mod:`bot.announcing`.

Each step is an object with a name and an idempotent ``run``; the pipeline journals a step as
started once and as done with its detail, so a restart resumes where a crash stopped and
nothing happens twice. A failing step is retried on every scan; the channel hears of each new
reason once. Steps are found by name (:data:`PIPELINE`, plus the index step when the plan
replaces live files: ``bot.index_publishing.pipeline_for``, and the sign step first when the
RM confirmed with a login: ``bot.sign_step``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol

from bot import announcing, index_publishing, sign_step
from bot.connections import Connections
from bot.domain import late
from bot.domain.history import EventKind, ReleaseState
from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.errors import PromotionConflict, RelbotError, StorageError
from bot.login import Logins
from bot.messages import ChannelKind, ChannelMessage
from bot.metrics import Metrics
from bot.pinning import listing, public_folders
from bot.ports import Journal
from bot.refusals import Refusal
from bot.release_locks import ReleaseLocks
from bot.render import size_text
from bot.reporter import Reporter

log = logging.getLogger(__name__)

BOT = "relbot"  # the actor of events the bot causes itself (a step, a withdrawn claim)
PIPELINE = ("promote", "register", "purge", *announcing.STEPS, "announce")


@dataclass(frozen=True)
class Run:
    """One attempt at one step: the plan, the release as journaled, and whether the frozen
    files were just hashed (at confirmation)."""

    plan: PublishPlan
    state: ReleaseState
    verified: bool


class Step(Protocol):
    name: str

    async def run(self, run: Run) -> str:
        """Do the step (again: it is idempotent); the detail journaled with it. Raises
        ``RelbotError`` or ``OSError`` when it must be retried later."""
        ...


class Promote:
    """Move the frozen files to their public places, then check they are exactly the plan."""

    name = "promote"

    def __init__(self, conn: Connections, metrics: Metrics) -> None:
        self._conn = conn
        self._metrics = metrics
        self._public_locks = ReleaseLocks()  # per public folder: one promotion; kept while used

    async def run(self, run: Run) -> str:
        plan, storage = run.plan, self._conn.storage
        async with contextlib.AsyncExitStack() as stack:
            # Two tags sharing a public folder (3.14.0rc1, rc2 → 3.14.0/) never promote at
            # once: each conflict check must see the other's files.
            for folder in public_folders(plan):
                await stack.enter_async_context(self._public_locks.hold(folder))
            # The install index leaves the frozen release first: it replaces the live one
            # after promotion (the index step), never by promotion's no-clobber moves.
            await asyncio.to_thread(index_publishing.set_aside, storage, plan)
            report = await asyncio.to_thread(
                functools.partial(
                    storage.promote,
                    plan.promoted,
                    verified=run.verified,
                    public_before=run.state.public_before,
                )
            )
            problems = await asyncio.to_thread(storage.verify_public, plan.promoted)
        if problems:
            self._metrics.public_mismatches += 1
            raise StorageError(
                f"After the move, the public files differ from the confirmed plan "
                f"({listing(problems)}); registering and announcing wait until someone "
                "checks them."
            )
        return (
            f"{len(report.renamed)} folders renamed, {report.moved} files moved, "
            f"{report.already} already public"
        )


class SwapIndex:
    """Replace the live install index with the release's (a compare-and-swap)."""

    name = index_publishing.INDEX_STEP

    def __init__(self, conn: Connections) -> None:
        self._conn = conn

    async def run(self, run: Run) -> str:
        return await asyncio.to_thread(index_publishing.swap, self._conn.storage, run.plan)


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
        logins: Logins | None = None,
    ) -> None:
        self._conn = conn
        self._store = store
        self._metrics = metrics
        self._reporter = reporter
        self._published = published  # called once the PUBLISHED event is journaled
        steps: list[Step] = [
            sign_step.Sign(conn, store, profile, logins or Logins(), actor=BOT),
            Promote(conn, metrics),
            SwapIndex(conn),
            Register(conn),
            Purge(conn, reporter),
            announcing.CheckDownloads(conn, metrics),
            announcing.PublishReleasePage(conn, reporter),
            announcing.PostAnnouncement(conn),
            Announce(conn, profile, store),
        ]
        self.steps = {step.name: step for step in steps}

    async def run(self, state: ReleaseState, *, verified: bool = False) -> None:
        """Run the confirmed publish of ``state`` from the first step not done. A step that
        fails stops it (journaled as started once; told to the channel once per reason);
        ``verified``: the frozen files were just hashed (at confirmation)."""
        plan, tag = state.publishing, state.tag
        assert plan is not None
        if await self._reporter.storage_trouble():
            return  # another bot holds the storage: told once; resumes once it is ours
        names = index_publishing.pipeline_for(plan, PIPELINE)
        if state.to_sign:  # confirmed with a login: the files are signed before anything moves
            names = (sign_step.NAME, *names)
        for name in names:
            if name in state.steps_done:
                continue
            if state.step_started != name:
                self._store.append(tag, BOT, EventKind.STEP_STARTED, step=name)
            try:
                detail = await self.steps[name].run(Run(plan, state, verified))
            except PromotionConflict as err:
                await self._conflict(state, err)
                return
            except sign_step.SigningFailed as err:
                self._metrics.publish_failures += 1
                await sign_step.call_off(
                    self._conn, self._store, self._reporter, state, err, actor=BOT
                )
                return
            except (RelbotError, OSError) as err:
                self._metrics.publish_failures += 1
                log.warning("publish of %s stopped at %s: %s", tag, name, err)
                reason = err if isinstance(err, RelbotError) else f"{err.strerror or err}."
                text = f"Publishing {tag} stopped at {name}: {reason} It resumes by itself."
                await self._reporter.publish_stopped(tag, text, who(state.publisher))
                return
            self._store.append(tag, BOT, EventKind.STEP_DONE, step=name, detail=detail)
            state = self._store.release(tag)  # a step may add to the plan (the signatures)
            assert state.publishing is not None
            plan = state.publishing
        self._store.append(
            tag, BOT, EventKind.PUBLISHED, files=len(plan.files), size=plan.total_size
        )
        self._metrics.publishes += 1
        await self._published(tag)

    async def _conflict(self, state: ReleaseState, err: PromotionConflict) -> None:
        """A public file in the way: undo the publish when nothing moved, else stop and tell."""
        plan, tag, storage = state.publishing, state.tag, self._conn.storage
        assert plan is not None
        if not err.moved and not await self._public_or_unknown(state):
            with contextlib.suppress(StorageError):  # else stays stuck: /abort retries
                await asyncio.to_thread(storage.thaw, plan)
                await asyncio.to_thread(index_publishing.put_back, storage, plan)
                self._store.append(tag, BOT, EventKind.ABORTED, reason=str(err))
                await self._reporter.notice(
                    tag,
                    f"Publishing {tag} was stopped before anything moved: {err} "
                    "Its files are back in staging.",
                    mentions=who(state.publisher),
                )
                return
        self._metrics.publish_failures += 1
        text = (
            f"Publishing {tag} stopped part-way: {err} Some files are public already; "
            "remove the conflicting file and it resumes by itself."
        )
        await self._reporter.publish_stopped(tag, text, who(state.publisher))

    async def made_public(self, state: ReleaseState) -> list[str]:
        """Planned targets this publish has made public (those public before do not count).
        When storage cannot tell, assume something is: abort must never half-undo. Raises
        :class:`Refusal` when storage cannot tell."""
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
