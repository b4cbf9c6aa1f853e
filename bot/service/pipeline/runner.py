"""The runner of the publish pipeline: it runs the confirmed publish of a release from the
first step not done, journals each step as started once and as done with its detail, and
leaves a failed publish waiting, stopped or aborted by itself (the states the steps' module
describes, :mod:`bot.service.pipeline.steps`). ``/abort`` is journaled before it acts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from bot.domain.history import EventKind, ReleaseState, Stop
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import INDEX_STEP, INDEX_WAITS
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
from bot.service import windows_index
from bot.service.connections import Connections
from bot.service.pipeline import announcing, sign
from bot.service.pipeline.steps import (
    BOT,
    PIPELINE,
    Announce,
    Freeze,
    Outcome,
    Promote,
    Purge,
    Register,
    Run,
    Step,
    SwapIndex,
    Tidy,
    who,
)
from bot.service.refusals import Refusal
from bot.service.render import count
from bot.service.reporter import Reporter
from bot.service.stops import stop_text
from bot.signing.login import Logins

log = logging.getLogger(__name__)

# Called when the freeze found staged files that are not the confirmed ones: withdraws the
# claims on them; returns the people to tell (whoever claimed them).
StagedChangedHook = Callable[[ReleaseTag, list[str]], Awaitable[list[str]]]


async def _withdraw_nothing(tag: ReleaseTag, paths: list[str]) -> list[str]:
    """The hook of a pipeline that keeps no claims (one built only to list its steps)."""
    return []


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
        staged_changed: StagedChangedHook = _withdraw_nothing,
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
            SwapIndex(conn, profile),
            Register(conn, reporter),
            Purge(conn, reporter),
            announcing.CheckDownloads(conn, metrics),
            announcing.PublishReleasePage(conn, reporter),
            announcing.PostAnnouncement(conn),
            Announce(conn, profile, store),
            Tidy(conn, reporter),
        ]
        self.steps = {step.name: step for step in steps}

    async def run(self, state: ReleaseState, *, answered: bool = False) -> Outcome:
        """Run the confirmed publish of ``state`` from the first step not done (or finish
        its journaled ``/abort``). A stopped publish is not run again: it waits for the RM.

        A finished publish's outcome says ``Published TAG: …``; when no command is
        ``answered`` with it (a publish resumed after a restart or an outage), the channel
        tells it to the RM last, in the same words."""
        plan, tag = state.publishing, state.tag
        assert plan is not None
        before, publisher = len(state.public_files), state.publisher
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
        copies_fresh = False  # made by this run's own freeze, from its start
        try:
            for name in names:
                if name in state.steps_done:
                    continue
                resumed = state.step_started == name
                if not resumed:
                    self._store.append(tag, BOT, EventKind.STEP_STARTED, step=name)
                try:
                    detail = await self.steps[name].run(Run(plan, state, copies_fresh))
                except StagedChanged as err:
                    return await self._undo(state, err, withdraw=list(err.paths))
                except sign.SigningFailed as err:
                    self._metrics.publish_failures += 1
                    log.warning("signing %s failed: %s", tag, err)
                    reason = f"{sign.SIGNING_FAILED}: {err}"
                    return await self._drop(state, reason, sign.called_off(tag, err))
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
                if name == "freeze":  # a resumed freeze kept copies made before
                    copies_fresh = not resumed
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
        text = published_text(before, self._store.release(tag))
        if not answered:
            await self._reporter.notice(tag, text, mentions=who(publisher))
        return Outcome(True, text)

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
        if withdraw is None:
            text = (
                f"Publishing {tag} was stopped before anything moved: {err} Nothing was made "
                f"public and staging is as it was; /publish {tag} works again once that is "
                "sorted out."
            )
            return await self._drop(state, str(err), text)
        claimers = await self._staged_changed(tag, withdraw)
        text = (
            f"Publishing {tag} was stopped before anything moved: {err}, so the confirmed "
            "files cannot be had. Nothing was made public; the claims on those files "
            f"were withdrawn: say /ready again once they are right, then /publish {tag}."
        )
        return await self._drop(state, str(err), text, also=claimers)

    async def _drop(
        self, state: ReleaseState, reason: str, text: str, *, also: Sequence[str] = ()
    ) -> Outcome:
        """Abort a publish of which nothing is public: drop the bot's copies (staging was
        never touched), journal ``reason``, and tell the channel ``text`` once, mentioning
        the publisher and ``also``."""
        tag = state.tag
        with contextlib.suppress(StorageError):  # copies left behind are dropped next time
            await asyncio.to_thread(self._conn.storage.discard, tag)
        self._store.append(tag, BOT, EventKind.ABORTED, reason=reason)
        mentions = who(state.publisher)
        mentions += [p for p in also if p not in mentions]
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
        reason = state.aborting  # journaled by /abort before anything is touched
        assert reason is not None
        self._store.append(tag, person, EventKind.ABORTED, reason=reason)
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


def published_text(before: int, state: ReleaseState) -> str:
    """What the RM is told once a publish finished; late files (``before``: the files public
    before them) are told as added to what is public."""
    tag, total = state.tag, len(state.public_files)
    index = state.steps_done.get(INDEX_STEP, "")
    waits = ""
    if index.startswith(INDEX_WAITS):  # the shared index is not live yet
        waits = f" The install index {index}."
        total -= sum(1 for f in state.public_files[before:] if f.is_replacement)
    added = total - before
    verb = "is" if added == 1 else "are"
    if before:
        return (
            f"Published {tag}: {count(added, 'more file')} {verb} public ({total} in all).{waits}"
        )
    return f"Published {tag}: {count(added, 'file')} {verb} public.{waits}"
