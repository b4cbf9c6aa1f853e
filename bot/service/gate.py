"""The gate: the service layer's front door. It parses a chat line, identifies the person,
serializes the work on one release, and hands the command to its handler; it runs the
scheduled scan and resumes interrupted publishes. Every refusal is one sentence and changes
nothing; storage, signature and registry calls run in worker threads. The composition root
(``bot.app.build_gate``) builds it whole, with every port in one ``Connections``.

Where each question is answered:

- Is this confirmation code valid?        ``bot.domain.confirmation.check_code``
- Who may do what (ready, unready, lift a hold, publish, abort, waive, re-spin)?
                                          ``bot.domain.authority``
- What blocks a publish?                  ``Readiness.blockers`` (``bot.domain.readiness``)
                                          plus ``bot.domain.blockers.publish_blockers``
- What each command does                  ``bot.service.handlers`` (one function per command)
- What may run while a publish is under way
                                          ``bot.service.while_publishing``
- What staging holds, its hashes, signatures and install index
                                          ``bot.service.observer.Observer``
- What happens after a confirmation       ``bot.service.pipeline``: the steps (``steps``,
                                          ``sign``, ``announcing``), run by ``runner``
- What the channel is told                ``bot.service.reporter.Reporter``
- What they share (locks, the plan ``/publish`` offers)
                                          ``bot.service.services.Services``
- What it talks to                        ``bot.ports`` (held in ``Connections``)
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence

from bot.config import Config
from bot.domain import commands as cmd
from bot.domain.blockers import publish_blockers
from bot.domain.confirmation import hash_code
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError, RelbotError, StagingUnreachable, StorageError
from bot.metrics import Metrics
from bot.ports import (
    Journal,
)
from bot.ports.messages import Reply, Tone
from bot.service import handlers
from bot.service.connections import Connections
from bot.service.deadlines import Deadlines
from bot.service.follow_ups import FollowUps
from bot.service.glance import where
from bot.service.hashing import Hashes
from bot.service.observed import Observed
from bot.service.observer import MAX_BUNDLE, Sight
from bot.service.pipeline import announcing
from bot.service.pipeline.steps import BOT, PIPELINE
from bot.service.refusals import CodeRefused, NotAllowed, Refusal, refusal_reason
from bot.service.render import help_text
from bot.service.services import Services
from bot.team import Team

__all__ = [
    "BOT",
    "MAX_BUNDLE",
    "PIPELINE",
    "CodeRefused",
    "Gate",
    "NotAllowed",
    "Observed",
    "Refusal",
    "hash_code",
    "new_code",
]

log = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
CODE_LENGTH = 8
# The board asks python.org whether a publishable release could be registered at most this
# often (seconds): python.org allows 600 API requests an hour for the bot's user, and five
# releases waiting for their RMs with the board open must not spend them (30 an hour, not
# 600 at one ask per 30 s poll). /publish always asks.
PREFLIGHT_EVERY = 600.0


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


class Gate:
    """The front door, built whole by the composition root (``bot.app.build_gate``): the
    config, the journal, the connections to the world (:class:`Connections`, each port
    already made) and the metrics it reports to. ``profile`` is the config's profile with
    the branch statuses journaled with each published plan; ``team`` the config's people."""

    def __init__(
        self,
        config: Config,
        store: Journal,
        conn: Connections,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        settle_seconds: float = 1.0,
        code_factory: Callable[[], str] = new_code,
    ) -> None:
        self.config = config
        self.store = store
        self._conn = conn
        self._services = Services(
            config,
            store,
            self._conn,
            metrics or Metrics(),
            clock=clock,
            sleep=sleep,
            settle_seconds=settle_seconds,
            code_factory=code_factory,
        )
        self.profile: Profile = self._services.profile
        self.team: Team = self._services.team
        self.metrics: Metrics = self._services.metrics
        self.reads: Deadlines = self._services.observer.reads  # each read of staging
        self.follow_ups: FollowUps = self._services.follow_ups  # told once files are hashed
        self.hashes: Hashes = self._services.observer.hashes  # hashing beside commands, scans
        self._clock = clock
        self._staged_names: list[str] | None = None  # staging's folders, as last listed

    # -- entry points ------------------------------------------------------------------------

    async def handle(
        self, platform: str, user: str, text: str, *, room: int | None = None
    ) -> Reply:
        """Answer one chat line from ``user`` on ``platform``. Always exactly one reply.
        ``room``: the characters of plain text one message holds on ``platform`` (None: no
        limit); an answer that may be long (``/status`` of every release) fits in it."""
        reply = await self._answer(platform, user, text, room)
        if reply.private:
            self.metrics.refused(reply.refusal)
        return reply

    async def _answer(self, platform: str, user: str, text: str, room: int | None) -> Reply:
        try:
            command = cmd.parse_command(text, self.profile.roles)
        except cmd.CommandError as err:
            return Reply(str(err), Tone.REFUSAL, refusal="syntax")
        verb = type(command).__name__.lower()
        self.metrics.commands[verb] = self.metrics.commands.get(verb, 0) + 1
        if isinstance(command, cmd.Help):
            return Reply(help_text(self.profile.roles, command.topic))
        if isinstance(command, cmd.Status):
            try:
                if command.tag is not None:
                    return await handlers.status(self._services, command.tag)
                return await self._glance(room)
            except StorageError as err:
                return Reply(f"{err} Try /status again shortly.", Tone.REFUSAL, refusal="storage")
        person = self.team.identify(platform, user)
        tag = command.tag
        if person is None:
            # Logged, not audited: strangers must not be able to grow a release's history.
            log.info("refused a %s command from %s user %r: not on the team", verb, platform, user)
            return Reply(
                f"You are not on the release team ({platform} user {user}); ask an admin to "
                "add your ID to relbot's config.",
                Tone.REFUSAL,
                refusal="not_on_team",
            )
        async with self._services.lock(tag):
            try:
                return await handlers.dispatch(self._services, person, command)
            except Refusal as err:
                return self._refuse(person, text, str(err), why=refusal_reason(err))
            except StorageError as err:
                return Reply(
                    f"{err} Nothing was changed; try again shortly.",
                    Tone.REFUSAL,
                    refusal="storage",
                )

    async def _glance(self, room: int | None) -> Reply:
        """``/status`` with no tag: a line per open release, as last seen, and staging's folders
        as last listed (a publish may hold the connection for seconds: this never waits)."""
        names = self._staged_names
        tags = await self.open_tags() if names is None else self._open_among(names)
        notes = await handlers.look_at_unlisted(self._services, tags)
        looks = [(tag, await self.observed(tag, ask=False)) for tag in tags]
        return handlers.glance(self._services, looks, notes, room)

    def at_a_glance(
        self, seen: Sequence[tuple[ReleaseTag, Observed]]
    ) -> dict[str, tuple[str, str]]:
        """tag → (where it stands, who must act) in ``/status``'s words, for the board (no I/O)."""
        now = self._clock()
        return {
            str(look.tag): where(look, now) for look in handlers.looks(self._services, seen, {})
        }

    async def scan(self) -> None:
        """One scheduled pass: one look at every open release (one command over SFTP), digests
        only for changed files, a channel update only when something changed."""
        reporter = self._services.reporter
        if reporter.health.skip_scans > 0:
            reporter.health.skip_scans -= 1
            return
        started = time.perf_counter()
        try:
            await reporter.storage_trouble()  # the heartbeat of the storage lock
            tags = await self.open_tags()
            snapshot = await self._services.observer.snapshot(list(map(self.store.release, tags)))
            for tag in tags:
                async with self._services.lock(tag):
                    try:
                        await self._services.scan_release(tag, snapshot)
                    except StagingUnreachable:
                        raise
                    except StorageError as err:  # one release's trouble: scan the others
                        self.metrics.scan_failures += 1
                        await reporter.scan_failed(tag, err)
                    else:
                        await reporter.scan_done(tag)
        except StorageError as err:
            self.metrics.scan_failures += 1
            await reporter.staging_down(err)
            return
        self.metrics.scanned(time.perf_counter() - started, self._clock())
        await reporter.staging_up()
        await self.resume()

    async def resume(self) -> None:
        """Finish publishes that a crash or an outage interrupted (the journal says where)."""
        for tag in self.store.open_tags():
            if self.store.release(tag).publishing is not None:
                async with self._services.lock(tag):
                    state = self.store.release(tag)
                    # A hold pauses a stuck publish: nothing more becomes public until /unhold.
                    if state.publishing is not None and not state.holds:
                        await self._services.pipeline.run(state)

    async def open_tags(self) -> list[ReleaseTag]:
        """Releases staged, or recorded and still to watch (see :meth:`_watched`)."""
        self._staged_names = await self._services.observer.staged_tags()
        return self._open_among(self._staged_names)

    def _open_among(self, names: list[str]) -> list[ReleaseTag]:
        """:meth:`open_tags` with staging's folders ``names`` (no I/O)."""
        tags = set()
        for name in names:
            try:
                tags.add(ReleaseTag.parse(name))
            except RelbotError:
                continue  # a folder that is not a release: not ours to judge
        for tag in self.store.open_tags():
            if tag in tags or self._watched(tag):
                tags.add(tag)
            elif self._services.observer.seen(tag) is not None:
                self._services.forget(tag)  # gone from staging: what was seen is stale
        return sorted(tags)

    def _watched(self, tag: ReleaseTag) -> bool:
        """Whether a recorded release whose staging folder is gone (or never came) still
        has something to watch: a claim, a hold, a plan, a publish. One with nothing staged,
        nothing public and no hold is pruned from scans, ``/status`` and the board, so what
        is left of old commands costs nothing (its history stays in the log)."""
        state = self.store.release(tag)
        busy = state.offer is not None or state.publishing is not None
        return busy or bool(state.claims or state.holds) or state.is_published

    def listed_tags(self) -> list[ReleaseTag]:
        """Releases whose staging the bot has listed since it started (no I/O)."""
        return self._services.observer.listed_tags()

    def recorded_open_tags(self) -> list[ReleaseTag]:
        """Releases with history, not yet published, and listed since the start or with
        something to watch, from the journal alone (no storage I/O): what a platform offers
        when the staging cannot be listed, and what the board shows."""
        listed = set(self.listed_tags())
        return [t for t in self.store.open_tags() if t in listed or self._watched(t)]

    def looks(self) -> tuple[object, ...]:
        """What the gate last saw of every release, as objects that each new look replaces
        (the board caches what it renders on them)."""
        return self._services.observer.looks()

    def retained_tags(self) -> set[str]:
        """The releases this gate keeps anything for in memory (locks, observations,
        hashes, bundles): open releases only, whatever was typed."""
        return self._services.retained_tags()

    async def observed(self, tag: ReleaseTag, *, ask: bool = True) -> Observed:
        """``tag`` as last seen, and what ``/publish TAG`` would refuse for now, listing and
        hashing nothing (the board calls it on every request). python.org, ``/publish``'s last
        check, is asked only when nothing else blocks, at most every PREFLIGHT_EVERY seconds;
        never with ``ask`` False (its last answer, if any, counts)."""
        observer = self._services.observer
        state = self.store.release(tag)
        seen = observer.seen(tag)
        listing = seen.listing if seen is not None else None
        readiness, digests = None, {}
        if listing is not None and not state.is_published and state.publishing is None:
            assert seen is not None
            readiness = await observer.readiness(tag, listing, seen.previous, state)
            digests = observer.known_digests(tag, listing)
        rms = self.team.rms_of(tag.branch)
        blockers = publish_blockers(state, rms, listing, readiness, digests)
        if readiness is not None and not blockers:  # /publish would refuse without the words
            blockers += announcing.text_blockers(self.config, self._conn, tag, state)
        if readiness is not None and not blockers and self._conn.registry is not None:
            assert seen is not None  # as /publish: python.org only when all else is fine
            if ask:
                objection = await self._preflight_lately(tag, seen)
            else:
                objection = seen.preflight[1] if seen.preflight is not None else ""
            blockers += [f"python.org: {objection}"] if objection else []
        return Observed(state, readiness, digests, tuple(blockers))

    async def _preflight_lately(self, tag: ReleaseTag, seen: Sight) -> str:
        """python.org's objection to ``tag`` ("" for none), asked again when PREFLIGHT_EVERY
        old; while a command holds it (a publish), what it last knew: the board never waits."""
        assert self._conn.registry is not None
        last = seen.preflight
        fresh = last is not None and self._clock() - last[0] < PREFLIGHT_EVERY
        if self._services.locks.locked(str(tag)) or (last is not None and fresh):
            return last[1] if last is not None else ""
        async with self._services.lock(tag):
            try:
                await asyncio.to_thread(self._conn.registry.preflight, tag)
                objection = ""
            except RegistryError as err:
                objection = str(err)
        seen.preflight = (self._clock(), objection)
        return objection

    def _refuse(self, actor: str, text: str, reason: str, *, why: str = "rule") -> Reply:
        # Logged, never journaled: a refusal changes nothing, and refused commands on
        # thousands of tags must not grow the state, the board or the scans.
        log.info("refused %r from %s: %s", _redact(text), actor, reason)
        return Reply(reason, Tone.REFUSAL, refusal=why)


def _redact(text: str) -> str:
    """The command as typed, minus any confirmation and login code, for the audit trail."""
    words = text.split()
    if len(words) >= 4 and words[2].lower() == "confirm":
        words[3:] = ["<code>", *["<login>" for _ in words[4:]]]
    return " ".join(words)[:200]
