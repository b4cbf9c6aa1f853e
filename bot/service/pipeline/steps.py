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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from bot.domain import late
from bot.domain.history import ReleaseState
from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.text import listing
from bot.domain.windows_index import INDEX_STEP
from bot.errors import PublishStopped, StagedChanged, StateWriteError, StorageError
from bot.metrics import Metrics
from bot.ports import Journal, Left
from bot.ports.messages import ChannelKind, ChannelMessage, Once
from bot.service import windows_index
from bot.service.connections import Connections
from bot.service.pipeline import announcing
from bot.service.release_locks import ReleaseLocks
from bot.service.render import count, size_text
from bot.service.reporter import Reporter
from bot.service.while_publishing import public_folders

log = logging.getLogger(__name__)

BOT = "relbot"  # the actor of events the bot causes itself (a step, a withdrawn claim)
PIPELINE = ("freeze", "promote", "register", "purge", *announcing.STEPS, "announce", "tidy")


@dataclass(frozen=True)
class Run:
    """One attempt at one step: the plan, and the release as journaled before it.
    ``copies_fresh``: the bot's copies were all made by this run's own freeze, moments ago
    (else time has passed since they were hashed: a restart, a stop, a retry)."""

    plan: PublishPlan
    state: ReleaseState
    copies_fresh: bool = False


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
                functools.partial(
                    storage.promote,
                    plan,
                    public_before=run.state.public_before,
                    recheck=not run.copies_fresh,
                )
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
    """Replace the live install index with the release's (a compare-and-swap), or leave it
    to the last of the releases it is shared with."""

    name = INDEX_STEP

    def __init__(self, conn: Connections, profile: Profile) -> None:
        self._conn = conn
        self._profile = profile

    async def run(self, run: Run) -> str:
        return await asyncio.to_thread(
            windows_index.swap, self._conn.storage, run.plan, self._profile
        )


# The publishes' waits on python.org and the CDN run in threads of their own, not in the
# default pool (six threads on two cores) that scans, /status and the board need: python.org's
# budget may hold a registration for minutes, and purges queue for their turn, one at a time.
_REGISTRATIONS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="relbot-register")
_PURGES = ThreadPoolExecutor(max_workers=1, thread_name_prefix="relbot-purge")


class Register:
    """Make python.org's records match every public file of the release; a wait python.org's
    rate limit asks for, or the bot's budget of its requests (shared by every publish), is
    told once to this release's channel, never another's."""

    name = "register"

    def __init__(self, conn: Connections, reporter: Reporter) -> None:
        self._conn = conn
        self._reporter = reporter

    async def run(self, run: Run) -> str:
        registry = self._conn.registry
        if registry is None:
            return "no release database configured"
        # By difference: the records of files published earlier must stay (late files).
        everything = replace(run.plan, files=run.state.public_files + run.plan.files)
        loop, tag = asyncio.get_running_loop(), run.plan.tag

        def tell(text: str) -> None:  # from the worker thread, while the sync waits
            asyncio.run_coroutine_threadsafe(self._reporter.notice(tag, text), loop)

        sync = functools.partial(registry.sync, everything, notice=tell)
        synced = await loop.run_in_executor(_REGISTRATIONS, sync)
        return (
            f"{synced.created} created, {synced.replaced} replaced, "
            f"{synced.deleted} deleted, {synced.unchanged} unchanged"
        )


class Purge:
    """Ask the CDN to forget its copies; a failure is told, never retried (pages expire).
    Publishes share the purger: a URL another publish purged since this one asked is not
    purged twice, and the result says how many."""

    name = "purge"

    def __init__(self, conn: Connections, reporter: Reporter) -> None:
        self._conn = conn
        self._reporter = reporter

    async def run(self, run: Run) -> str:
        purger, plan = self._conn.purger, run.plan
        if purger is None:
            return "no CDN configured"
        replaced = [f.target for f in plan.replacements]  # the install index
        # Asked now, after the release's change: URLs another publish's purge sends while
        # this one waits for its turn are not sent again.
        since = purger.ask()
        log.info("%s asks for its CDN purge (mark %d)", plan.tag, since)
        purge = functools.partial(purger.purge, plan.tag, replaced, since=since)
        purged = await asyncio.get_running_loop().run_in_executor(_PURGES, purge)
        if purged.failed:
            failed = "; ".join(str(f) for f in purged.failed[:5])
            await self._reporter.notice(
                plan.tag,
                f"The CDN purge of {plan.tag} failed for {len(purged.failed)} URLs "
                f"({failed}); the files are public, stale pages expire on their own.",
            )
        already = len(purged.already)  # sent by another publish since this one was asked
        shared = f", {already} already purged by another publish" if already else ""
        return f"{len(purged.purged)} URLs purged{shared}, {len(purged.failed)} failed"


class Announce:
    """Tell the channel the release (or its late files) is public, once: the post carries
    the publish's mark, so that a bot that died after posting and before this step was
    journaled finds its post in the channel instead of posting again."""

    name = "announce"
    event = "relbot_announcement"  # the kind of mark its post carries (Slack's event_type)

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
        # The confirmed plan (signatures included: signing comes first) names this publish.
        once = Once(self.event, str(plan.tag), plan.digest[:16])
        message = ChannelMessage(ChannelKind.ANNOUNCEMENT, str(plan.tag), text, once=once)
        await self._conn.chat.post(message)
        return "announced"


class Tidy:
    """Remove the staged originals the release was copied from (those still exactly what the
    bot copied, from the folders it copied them from) and the bot's copies. The release is
    public by now: whatever the tidy cannot do is one line to the channel, never a stop and
    never a retry (only a state that cannot be written stops it)."""

    name = "tidy"

    def __init__(self, conn: Connections, reporter: Reporter) -> None:
        self._conn = conn
        self._reporter = reporter

    async def run(self, run: Run) -> str:
        plan = run.plan
        try:
            left = await asyncio.to_thread(self._conn.storage.tidy, plan)
        except StateWriteError:
            raise
        except (StorageError, OSError) as err:  # the work folder not the bot's, a dropped link
            why = str(err) if isinstance(err, StorageError) else err.strerror or str(err)
            await self._reporter.notice(
                plan.tag, f"{plan.tag} is published, but staging was left as it is: {why}"
            )
            return f"staging left as it is: {why}"
        if not left:
            return "staged originals removed"
        reasons = _reasons(left)
        await self._reporter.notice(
            plan.tag,
            f"staging/{plan.tag}: {count(len(left), 'file')} left for their uploaders to remove: "
            f"{listing(list(left), 10)} ({'; '.join(reasons.values())})",
            mentions=who(run.state.publisher),
        )
        return f"staged originals removed, {len(left)} left: {'; '.join(reasons)}"


def _reasons(left: list[str]) -> dict[str, str]:
    """Why the tidy left files, by kind: the kind (for the journal) to its sentence (for
    the channel), naming the files when there is more than one kind."""
    kinds: dict[str, list[str]] = {}
    for path in left:
        why = path.why if isinstance(path, Left) else "changed"
        if why == "changed":
            kind = "changed since the confirmation"
        elif why.startswith("folder "):
            kind = f"{why.removeprefix('folder ')}/ is not the folder they were copied from"
        else:
            kind = why.removeprefix("error ")
        kinds.setdefault(kind, []).append(path)
    if len(kinds) == 1:
        return {kind: kind for kind in kinds}
    return {kind: f"{listing(paths, 3)}: {kind}" for kind, paths in kinds.items()}


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
