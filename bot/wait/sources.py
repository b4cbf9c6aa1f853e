"""Where ``relbot wait`` looks (:class:`bot.wait.judge.Source`): the running bot's board over
HTTP, from any machine that reaches it; or, on the bot's machine, the state file and staging.

What one look costs:

- :class:`BoardSource`: one ``GET /api/releases/TAG``. The bot answers it from what it last
  observed; it lists and hashes nothing for it.
- :class:`StateFileSource`: one indexed query on the state file, opened read-only (no lock,
  never blocking the bot), which returns only the events recorded since the last look. Staging
  is listed only once the log says every role is ready or waived (for ``published``, never), at
  most once per ``poll_interval`` unless the log changed, with one listing per folder like the
  bot's scan. It hashes only the files whose size or mtime moved since ``/ready`` and, for
  ``publishable`` with ``[signatures] require``, each signed file once (then by size and mtime,
  as the bot does).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx

from bot.app import build_storage, build_verifier
from bot.config import Config
from bot.domain.blockers import publish_blockers
from bot.domain.files import Listing, needs_digest
from bot.domain.history import ReleaseState
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError, StorageError
from bot.journal.reader import LogReader
from bot.ports import Storage
from bot.ports.messages import ChannelMessage
from bot.service import index_day
from bot.service.connections import Connections
from bot.service.gate import Observed
from bot.service.observer import Observer
from bot.service.refusals import Refusal
from bot.team import Team
from bot.wait.judge import LookFailed, Release, Source, Until
from bot.web.board import release_view

BOARD_TIMEOUT = 10.0  # seconds for one request to the board


class BoardSource:
    """The release's JSON from the running bot's board, e.g. ``http://127.0.0.1:9110`` (the
    ``[health]`` server, or the same path behind a proxy or an SSH tunnel)."""

    def __init__(self, board: str, tag: ReleaseTag, *, timeout: float = BOARD_TIMEOUT) -> None:
        url = httpx.URL(board)
        if url.scheme not in ("http", "https") or not url.host:
            raise RelbotError(
                f"--board: {board!r} is not the board's URL; give it as "
                "http://HOST:PORT (the [health] server of the bot)."
            )
        self.url = f"{board.rstrip('/')}/api/releases/{tag}"
        # Never through a proxy from the environment: the board is on loopback or a tunnel.
        self._client = httpx.AsyncClient(timeout=timeout, trust_env=False)

    async def look(self) -> Release | None:
        try:
            response = await self._client.get(self.url)
        except httpx.HTTPError as err:
            why = str(err) or type(err).__name__
            raise LookFailed(f"The board at {self.url} cannot be reached ({why}).") from err
        body = _json(response)
        if response.status_code == 404 and body is not None and "error" in body:
            return None  # the board's own answer: it has never seen the release
        if response.status_code != 200 or body is None or "tag" not in body:
            raise LookFailed(
                f"{self.url} answered {response.status_code} without a release's JSON; "
                "is it the bot's board ([health] server)?"
            )
        return body

    async def close(self) -> None:
        await self._client.aclose()


def _json(response: httpx.Response) -> dict[str, Any] | None:
    if response.headers.get("content-type", "").split(";")[0] != "application/json":
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


class _NoChat:
    """The observer never posts; a wait has no channel."""

    async def post(self, message: ChannelMessage) -> str:
        return ""

    async def update(self, ref: str, message: ChannelMessage) -> None:
        return None


class StateFileSource:
    """The release's JSON built as the board builds it, from the state file (read-only) and,
    when the log says every role is ready, from one look at staging."""

    def __init__(
        self,
        config: Config,
        tag: ReleaseTag,
        until: Until,
        *,
        storage: Storage | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config, self._tag, self._until, self._clock = config, tag, until, clock
        self._storage = storage  # default: the config's, made at the first listing
        self._log = LogReader(config.state_path)
        self._profile = config.profile
        self._rms = Team(config.people).rms_of(tag.branch)
        self._signatures = config.requires_signatures(tag)
        self._observer: Observer | None = None  # made at the first listing (SFTP connects)
        self._last: tuple[float, int, Observed] | None = None  # (listed at, last event, seen)
        self._listings = 0  # how many times staging was listed
        self._json: tuple[tuple[int, int], Release] | None = None  # the last JSON, and its key

    async def look(self) -> Release | None:
        events, state = self._log.look(self._tag)
        if not events:
            return None
        if self._lists_staging(state):
            observed = await self._observed(state, events[-1].id)
        else:
            self._last = None  # the log moved away from "every role ready": look afresh later
            blockers = publish_blockers(state, self._rms, None, None, {})
            observed = Observed(state, None, {}, tuple(blockers))
        # The same events and the same observation make the same JSON, except an offered
        # plan, which expires with time: then it is built again.
        key = (events[-1].id, self._listings if self._last else 0)
        if self._json is not None and self._json[0] == key and state.offer is None:
            return self._json[1]
        view = release_view(
            self._profile,
            self._tag,
            observed,
            events,
            now=self._clock(),
            signatures_required=self._signatures,
        )
        self._json = (key, view.to_json())
        return self._json[1]

    def _lists_staging(self, state: ReleaseState) -> bool:
        """Whether staging can tell more than the log: never for ``published``, nor once a
        publish is confirmed (the board does not list then either); otherwise only when every
        role the release requires is claimed or waived (and, for ``publishable``, no hold)."""
        if self._until is Until.PUBLISHED or state.is_published or state.publishing is not None:
            return False
        if self._until is Until.PUBLISHABLE and state.holds:
            return False
        waived = {t for t, w in state.waivers.items() if w.is_role}
        return all(r in state.claims or r in waived for r in self._profile.roles_for(self._tag))

    async def _observed(self, state: ReleaseState, last_event: int) -> Observed:
        """What staging says, listed again when the log changed or the last listing is a
        poll interval old (the bot's own cadence)."""
        now = self._clock()
        if self._last is not None:
            listed_at, seen_event, observed = self._last
            fresh = now - listed_at < self._config.model.poll_interval
            if seen_event == last_event and fresh:
                return observed
        observed = await self._list(state)
        self._listings += 1
        self._last = (now, last_event, observed)
        return observed

    async def _list(self, state: ReleaseState) -> Observed:
        observer = self._observer or self._make_observer()
        tag = self._tag
        try:
            try:
                readiness, listing = await observer.observe(tag, state, settle=False)
            except Refusal:  # the staging folder is gone: every file of it is missing
                listing = {}
                readiness = await observer.readiness(
                    tag, listing, observer.last_listing(tag), state
                )
            digests = await self._digests(observer, state, listing)
        except StorageError as err:
            raise LookFailed(f"Staging cannot be listed: {err}") from err
        blockers = publish_blockers(state, self._rms, listing, readiness, digests)
        return Observed(state, readiness, digests, tuple(blockers))

    async def _digests(
        self, observer: Observer, state: ReleaseState, listing: Listing
    ) -> dict[str, str]:
        """Hashes of the claimed files whose mtime moved since ``/ready``: only their content
        tells whether the claim still holds (as the bot's scan decides). One still being
        hashed after a moment is not known yet: the claim does not hold until a later look."""
        claims = state.claims.values()
        moved = sorted({path for c in claims for path in needs_digest(c.snapshot, listing)})
        if moved:
            await observer.look_digests(self._tag, listing, moved)
        return observer.known_digests(self._tag, listing)

    def _make_observer(self) -> Observer:
        config = self._config
        # Signatures block only `publishable`, and only when required: else never hash for them.
        verify = self._until is Until.PUBLISHABLE and self._signatures
        storage = self._storage or build_storage(config)
        conn = Connections(storage, _NoChat(), verifier=build_verifier(config) if verify else None)
        self._observer = Observer(
            self._profile,
            conn,
            require_signatures=config.requires_signatures,
            sleep=asyncio.sleep,
            settle_seconds=1.0,
        )
        index_day.wire(self._observer, self._log.tags, lambda tag: self._log.look(tag)[1])
        return self._observer

    async def close(self) -> None:
        self._log.close()


def source_for(config: Config, tag: ReleaseTag, until: Until, board: str | None) -> Source:
    """The board at ``board`` when given, else the state file of ``config``."""
    if board is not None:
        return BoardSource(board, tag)
    return StateFileSource(config, tag, until)
