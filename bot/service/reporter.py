"""Channel reporting: each release's summary message kept up to date in place, notices (with
the people who must act on them), the call to the RMs when a release becomes publishable,
and the bot's own troubles told once each: staging unreachable, the storage lease held by
another bot, a publish that stopped.

What it keeps for a release (the summary's message and text, whether it was publishable, the
last publish trouble told) is dropped by :meth:`Reporter.forget`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.domain.history import ReleaseState
from bot.domain.readiness import Readiness
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError, StorageLocked
from bot.ports import Journal
from bot.ports.messages import ChannelKind, ChannelMessage
from bot.service.connections import Connections
from bot.service.render import summary_text
from bot.service.stops import stop_text
from bot.team import Team

log = logging.getLogger(__name__)


@dataclass
class Told:
    """What the channel was last told about one release."""

    summary_ref: str | None = None
    summary_text: str = ""
    publishable: bool | None = None  # None until first seen: a restart calls nobody
    pipeline_trouble: str = ""  # the last reason a publish stopped, told to the channel
    scan_trouble: str = ""  # why the last scan of the release could not finish, as told


@dataclass
class Health:
    unreachable_since: float | None = None
    skip_scans: int = 0
    failures: int = 0


class Reporter:
    def __init__(
        self,
        conn: Connections,
        store: Journal,
        team: Team,
        *,
        clock: Callable[[], float],
        poll_interval: float,
    ) -> None:
        self._conn = conn
        self._store = store
        self._team = team
        self._clock = clock
        self._poll_interval = poll_interval
        self._told: dict[str, Told] = {}
        self.health = Health()
        self._lease_trouble = ""

    def retained_tags(self) -> set[str]:
        return set(self._told)

    def forget(self, tag: ReleaseTag) -> None:
        self._told.pop(str(tag), None)

    def trouble(self, tag: ReleaseTag) -> str:
        """The last reason a publish of ``tag`` stopped, as told ("" for none); a stop the
        journal holds is told in its own words, even before this process told it."""
        told = self._told.get(str(tag))
        if told is not None and told.pipeline_trouble:
            return told.pipeline_trouble
        stopped = self._store.release(tag).stopped
        return stop_text(tag, stopped) if stopped is not None else ""

    def clear_trouble(self, tag: ReleaseTag) -> None:
        if (told := self._told.get(str(tag))) is not None:
            told.pipeline_trouble = ""

    async def publish_stopped(self, tag: ReleaseTag, text: str, mentions: Sequence[str]) -> bool:
        """Tell the channel why a publish stopped, once per new reason; whether it was told
        now."""
        told = self._told.setdefault(str(tag), Told())
        if told.pipeline_trouble == text:
            return False
        told.pipeline_trouble = text
        await self.notice(tag, text, mentions=mentions)
        return True

    def remember_trouble(self, tag: ReleaseTag, text: str) -> None:
        """What a publish stopped on, told before (by this process or before a restart)."""
        self._told.setdefault(str(tag), Told()).pipeline_trouble = text

    async def scan_failed(self, tag: ReleaseTag, err: StorageError) -> None:
        """A scan could not finish looking at ``tag`` (the others were scanned): logged
        every time, told to the channel once per new reason."""
        log.warning("scan of %s failed: %s", tag, err)
        told = self._told.setdefault(str(tag), Told())
        if told.scan_trouble != str(err):
            told.scan_trouble = str(err)
            await self.notice(tag, f"Cannot scan {tag}: {err} The next scan tries again.")

    async def scan_done(self, tag: ReleaseTag) -> None:
        """A scan looked at ``tag`` through: say so once after it could not."""
        told = self._told.get(str(tag))
        if told is not None and told.scan_trouble:
            told.scan_trouble = ""
            await self.notice(tag, f"{tag} can be scanned again.")

    async def summary(self, readiness: Readiness, state: ReleaseState) -> None:
        """Post the release's summary, or edit it in place; nothing when it reads the same."""
        told = self._told.setdefault(str(readiness.tag), Told())
        await self._tell_rms_when_publishable(readiness, state, told)
        text = summary_text(readiness, state)
        if text == told.summary_text:
            return
        # A published release has nothing left to break down: the headline says it all.
        shown = None if state.is_published else readiness
        message = ChannelMessage(ChannelKind.SUMMARY, str(readiness.tag), text, shown)
        ref = told.summary_ref or self._store.summary_ref(readiness.tag)
        if ref is None:
            told.summary_ref = await self._conn.chat.post(message)
            self._store.set_summary_ref(readiness.tag, told.summary_ref)
        else:
            await self._conn.chat.update(ref, message)
            told.summary_ref = ref
        told.summary_text = text

    async def _tell_rms_when_publishable(
        self, readiness: Readiness, state: ReleaseState, told: Told
    ) -> None:
        """Call the RMs when the release becomes publishable while the bot watches (not at
        a restart that finds it so: they were called when it happened)."""
        now = readiness.publishable and not state.is_published and state.publishing is None
        if now and told.publishable is False:
            tag = readiness.tag
            await self.notice(
                tag,
                f"{tag} is publishable: every role is ready. RM: /publish {tag}",
                mentions=self._team.rms_of(tag.branch),
            )
        told.publishable = now

    async def notice(self, tag: ReleaseTag | None, text: str, mentions: Sequence[str] = ()) -> None:
        """A new channel message; ``mentions`` are the people who must act on it."""
        where = str(tag) if tag else None
        message = ChannelMessage(ChannelKind.NOTICE, where, text, None, tuple(mentions))
        await self._conn.chat.post(message)

    # -- the bot's own health ----------------------------------------------------------------

    async def staging_down(self, err: StorageError) -> None:
        """A scan failed: back off (skip scans), and say so once until staging is back."""
        health = self.health
        health.failures += 1
        health.skip_scans = min(2 ** (health.failures - 1) - 1, 20)  # back off: skip scans
        log.warning(
            "scan %d of staging failed (%s); next scan in %d s",
            health.failures,
            err,
            (health.skip_scans + 1) * self._poll_interval,
        )
        if health.unreachable_since is None:
            health.unreachable_since = self._clock()
            await self.notice(None, f"Cannot scan staging: {err} I keep trying.")

    async def staging_up(self) -> None:
        health = self.health
        if health.unreachable_since is not None:
            await self.notice(None, "Staging is reachable again.")
        health.unreachable_since, health.failures, health.skip_scans = None, 0, 0

    async def storage_trouble(self) -> str:
        """Renew the storage lock (a heartbeat, and proof this bot still holds it); the
        reason when another bot holds it now, told to the channel once."""
        lease = self._conn.lease
        if lease is None:
            return ""
        try:
            await asyncio.to_thread(lease.renew)
        except StorageError as err:  # unreachable: the scan's own notice says so
            return str(err)
        except StorageLocked as err:
            if self._lease_trouble != str(err):
                self._lease_trouble = str(err)
                log.warning("%s", err)
                await self.notice(None, f"{err} This bot publishes nothing meanwhile.")
            return str(err)
        self._lease_trouble = ""
        return ""
