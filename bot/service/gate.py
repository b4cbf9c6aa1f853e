"""The gate: the service layer's front door. It parses a chat line, identifies the person,
serializes the work on one release, and hands the command to its handler; it runs the
scheduled scan and resumes interrupted publishes. Every refusal is one sentence and changes
nothing; storage, signature and registry calls run in worker threads.

Where each question is answered:

- Is this confirmation code valid?        ``bot.domain.confirmation.check_code``
- Who may do what (ready, unready, lift a hold, publish, abort, waive, re-spin)?
                                          ``bot.domain.authority``
- What blocks a publish?                  ``Readiness.blockers`` (``bot.domain.readiness``)
                                          plus ``bot.domain.blockers.publish_blockers``
- What each command does                  ``bot.service.handlers`` (one function per command)
- What staging holds, its hashes, signatures and install index
                                          ``bot.service.observer.Observer``
- What happens after a confirmation       ``bot.service.pipeline.runner.Pipeline``, one object
                                          per step
- What the channel is told                ``bot.service.reporter.Reporter``
- What they share (locks, the plan ``/publish`` offers)
                                          ``bot.service.services.Services``
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from bot.config import Config
from bot.domain import commands as cmd
from bot.domain.blockers import publish_blockers
from bot.domain.confirmation import hash_code
from bot.domain.history import ReleaseState
from bot.domain.profile import Profile
from bot.domain.readiness import Readiness
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError, RelbotError, StagingUnreachable, StorageError
from bot.metrics import Metrics
from bot.ports import (
    Chat,
    Forum,
    Journal,
    PublicDownloads,
    Purger,
    Registry,
    ReleasePage,
    SignatureVerifier,
    Storage,
)
from bot.ports.lease import StorageLease
from bot.ports.messages import Reply, Tone
from bot.service import handlers
from bot.service.connections import Connections
from bot.service.deadlines import Deadlines
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


@dataclass(frozen=True)
class Observed:
    """A release as the bot last saw it, for read-only views (the board): the state folded
    from the log now, readiness from the last listing a scan or command took, and why
    ``/publish`` would refuse (empty: it would offer a plan)."""

    state: ReleaseState
    readiness: Readiness | None  # None once published, or before staging was first listed
    digests: Mapping[str, str]  # SHA-256 of staged files hashed while unchanged since
    blockers: tuple[str, ...]


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


class Gate:
    def __init__(
        self,
        config: Config,
        store: Journal,
        storage: Storage,
        chat: Chat,
        *,
        registry: Registry | None = None,
        verifier: SignatureVerifier | None = None,
        purger: Purger | None = None,
        downloads: PublicDownloads | None = None,
        release_page: ReleasePage | None = None,
        forum: Forum | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        settle_seconds: float = 1.0,
        code_factory: Callable[[], str] = new_code,
    ) -> None:
        self.config = config
        self.store = store
        self._conn = Connections(
            storage,
            chat,
            registry,
            verifier,
            purger,
            downloads=downloads,
            release_page=release_page,
            forum=forum,
        )
        self._services = Services(
            config,
            store,
            self._conn,
            clock=clock,
            sleep=sleep,
            settle_seconds=settle_seconds,
            code_factory=code_factory,
        )
        self._clock = clock

    # -- what the gate is wired to (set after construction by `relbot run` and tests) --------

    @property
    def profile(self) -> Profile:
        return self._services.profile

    @property
    def team(self) -> Team:
        return self._services.team

    @property
    def metrics(self) -> Metrics:
        return self._services.metrics

    @property
    def storage(self) -> Storage:
        return self._conn.storage

    @property
    def chat(self) -> Chat:
        return self._conn.chat

    @property
    def registry(self) -> Registry | None:
        return self._conn.registry

    @registry.setter
    def registry(self, registry: Registry | None) -> None:
        self._conn.registry = registry

    @property
    def verifier(self) -> SignatureVerifier | None:
        return self._conn.verifier

    @verifier.setter
    def verifier(self, verifier: SignatureVerifier | None) -> None:
        self._conn.verifier = verifier

    @property
    def purger(self) -> Purger | None:
        return self._conn.purger

    @purger.setter
    def purger(self, purger: Purger | None) -> None:
        self._conn.purger = purger

    @property
    def downloads(self) -> PublicDownloads | None:
        """Where the published files are fetched and checked (``[downloads]``)."""
        return self._conn.downloads

    @downloads.setter
    def downloads(self, downloads: PublicDownloads | None) -> None:
        self._conn.downloads = downloads

    @property
    def release_page(self) -> ReleasePage | None:
        """The python.org release page made public (``[pydotorg] release_page``)."""
        return self._conn.release_page

    @release_page.setter
    def release_page(self, release_page: ReleasePage | None) -> None:
        self._conn.release_page = release_page

    @property
    def forum(self) -> Forum | None:
        """Where the announcement is posted (``[discourse]``)."""
        return self._conn.forum

    @forum.setter
    def forum(self, forum: Forum | None) -> None:
        self._conn.forum = forum

    @property
    def reads(self) -> Deadlines:
        """Every read of staging, each in a thread of its own with a deadline."""
        return self._services.observer.reads

    @property
    def lease(self) -> StorageLease | None:
        """The storage lock, held by `relbot run`."""
        return self._conn.lease

    @lease.setter
    def lease(self, lease: StorageLease | None) -> None:
        self._conn.lease = lease

    # -- entry points ------------------------------------------------------------------------

    async def handle(self, platform: str, user: str, text: str) -> Reply:
        """Answer one chat line from ``user`` on ``platform``. Always exactly one reply."""
        reply = await self._answer(platform, user, text)
        if reply.private:
            self.metrics.refused(reply.refusal)
        return reply

    async def _answer(self, platform: str, user: str, text: str) -> Reply:
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
                tags = [command.tag] if command.tag is not None else await self.open_tags()
                return await handlers.status(self._services, tags)
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

    async def scan(self) -> None:
        """One scheduled pass over every open release: one listing per folder, digests only
        for changed files, a channel update only when something changed."""
        reporter = self._services.reporter
        if reporter.health.skip_scans > 0:
            reporter.health.skip_scans -= 1
            return
        started = time.perf_counter()
        try:
            await reporter.storage_trouble()  # the heartbeat of the storage lock
            tags = await self.open_tags()
            for tag in tags:
                async with self._services.lock(tag):
                    try:
                        await self._services.scan_release(tag)
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
        """Releases with a staging folder, or with history, not yet published, and something
        left to watch (see :meth:`recorded_open_tags`)."""
        names = await self._services.observer.staged_tags()
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

    async def observed(self, tag: ReleaseTag) -> Observed:
        """``tag`` as last seen, and what ``/publish TAG`` would refuse for now, listing and
        hashing nothing (the board calls it on every request). python.org, ``/publish``'s last
        check, is asked only when nothing else blocks, and at most once per poll interval."""
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
        if readiness is not None and not blockers and self.registry is not None:
            assert seen is not None  # as /publish: python.org only when all else is fine
            objection = await self._preflight_lately(tag, seen)
            blockers += [f"python.org: {objection}"] if objection else []
        return Observed(state, readiness, digests, tuple(blockers))

    async def _preflight_lately(self, tag: ReleaseTag, seen: Sight) -> str:
        """python.org's objection to publishing ``tag`` ("" for none), asked again only when
        the last answer is a poll interval old and no command holds the release."""
        assert self.registry is not None
        last = seen.preflight
        fresh = last is not None and self._clock() - last[0] < self.config.model.poll_interval
        if last is not None and (fresh or self._services.locks.locked(str(tag))):
            return last[1]
        async with self._services.lock(tag):
            try:
                await asyncio.to_thread(self.registry.preflight, tag)
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
