"""Observing staging: what the bot last saw of each release's staging folder (listings, the
public files of a published release, signature verdicts, the install index check) and the
caches that keep a scan cheap (SHA-256 digests and Sigstore bundles, by size and mtime).

It reads storage and verifies signatures, and writes nothing: no event, no chat message.
Hashing runs beside it (bot/service/hashing.py): a look waits a moment for the hashes it
needs, then goes on with what is known. A file that cannot be the artifact (larger than the
profile allows, sparse, a bundle too big to be one) is never hashed nor read: readiness names
it. Everything it keeps for a release is dropped by :meth:`Observer.forget` (a re-spin drops
the files' caches only, :meth:`Observer.forget_files`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import operator
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from bot.domain import late
from bot.domain.files import RELEASE_FOLDER, Listing, StagedFile, is_cut
from bot.domain.history import ReleaseState
from bot.domain.profile import Profile
from bot.domain.readiness import FileReadiness, FileStatus, Readiness, compute_readiness
from bot.domain.signing import BUNDLE_SUFFIX, SignatureResult, SignatureStatus
from bot.domain.tags import ReleaseTag
from bot.domain.text import shown
from bot.errors import StagingUnreachable, StorageError
from bot.service.connections import Connections
from bot.service.deadlines import READ_SECONDS, Deadlines
from bot.service.hashing import PATIENCE, Hashes, Looked, StillHashing
from bot.service.refusals import Refusal
from bot.service.windows_index import IndexCheck, IndexInspector, Neighbour

log = logging.getLogger(__name__)

MAX_BUNDLE = 1 << 20  # a Sigstore bundle is a few kB; anything this big is not one


@dataclass
class Sight:
    """What the bot last saw of one release's staging folder."""

    listing: Listing | None = None
    previous: Listing | None = None  # the listing before ``listing`` (says what was growing)
    public: Listing | None = None  # a published release's public files, as staging paths
    signatures: tuple[SignatureResult, ...] = ()
    preflight: tuple[float, str] | None = None  # (when, python.org's objection or "")
    index: IndexCheck | None = None  # the staged install index, last checked


@dataclass(frozen=True)
class Snapshot:
    """Every open release's staging as a scan's one look found it (over SFTP one command
    on the server), for that scan only: a release is answered from it while nothing
    happened to it since (its state as it was, no newer listing of it seen: a command that
    ran meanwhile), else listed afresh, as a release missing from it is. Commands never use
    it."""

    listings: Mapping[str, Listing | None]
    states: Mapping[str, ReleaseState]  # each release's state when the look was taken
    seen: Mapping[str, Listing | None]  # and its last listing then

    def listing(self, state: ReleaseState, seen: Listing | None) -> Listed | None:
        """The listing of ``state``'s release from the look, None when it no longer holds
        (``state`` and ``seen``: the release's state and last listing now)."""
        name = str(state.tag)
        if name not in self.listings or state != self.states.get(name):
            return None
        if seen is not self.seen.get(name):
            return None
        return Listed(self.listings[name])


@dataclass(frozen=True)
class Listed:
    """A listing taken from a :class:`Snapshot` (None: the release has no folder)."""

    listing: Listing | None


class Observer:
    """Over 250 lines because every read of staging goes through it (listings, the public
    folders, hashes, bundles, the install index), each with its deadline, beside what it
    last saw of each release."""

    def __init__(
        self,
        profile: Profile,
        conn: Connections,
        *,
        require_signatures: Callable[[ReleaseTag], bool],
        sleep: Callable[[float], Awaitable[None]],
        settle_seconds: float,
        read_seconds: float = READ_SECONDS,
        patience: float = PATIENCE,
    ) -> None:
        self.profile = profile
        self._conn = conn
        self._require_signatures = require_signatures
        self._sleep = sleep
        self._settle = settle_seconds
        self._seen: dict[str, Sight] = {}
        self._bundles: dict[tuple[str, str], tuple[tuple[int, float], bytes]] = {}
        self.index = IndexInspector.for_profile(conn.storage, profile)
        # The other releases a staged index is judged with (bot/service/index_day.py): the
        # bot's and relbot wait's own, from their state; none until set.
        self.neighbours_of: Callable[[ReleaseTag], Sequence[Neighbour]] = lambda _: ()
        # Every read of staging (listings, hashes, bundles, the index) goes through here.
        self.reads = Deadlines(read_seconds)
        self.hashes = Hashes(self._storage_digest, self.reads, patience)

    def _storage_digest(self, tag: ReleaseTag, paths: Sequence[str], fresh: bool) -> dict[str, str]:
        return self._conn.storage.digest(tag, paths, fresh=fresh)

    # -- what was seen (no I/O) --------------------------------------------------------------

    def sight(self, tag: ReleaseTag) -> Sight:
        """What was last seen of ``tag`` (kept from now on)."""
        return self._seen.setdefault(str(tag), Sight())

    def seen(self, tag: ReleaseTag) -> Sight | None:
        """What was last seen of ``tag``, if anything (keeps nothing new)."""
        return self._seen.get(str(tag))

    def last_listing(self, tag: ReleaseTag) -> Listing | None:
        return self.sight(tag).listing

    def last_listing_seen(self, tag: ReleaseTag) -> Listing | None:
        """:meth:`last_listing`, keeping nothing new."""
        seen = self._seen.get(str(tag))
        return seen.listing if seen is not None else None

    def listed_tags(self) -> list[ReleaseTag]:
        """Releases whose staging the bot has listed since it started (no I/O)."""
        seen = self._seen.items()
        return sorted(ReleaseTag.parse(name) for name, o in seen if o.listing is not None)

    def known_digests(self, tag: ReleaseTag, listing: Listing) -> dict[str, str]:
        """Hashes of staged files unchanged since they were hashed."""
        return self.hashes.known(tag, listing)

    async def readiness(
        self, tag: ReleaseTag, listing: Listing, previous: Listing | None, state: ReleaseState
    ) -> Readiness:
        """Readiness from a listing, with the signature verdicts last checked (worked out in
        a worker thread: a listing may hold tens of thousands of entries)."""
        seen = self._seen.get(str(tag))  # not sight(): a status must not grow the cache
        readiness = await asyncio.to_thread(
            functools.partial(
                compute_readiness,
                self.profile,
                tag,
                listing,
                previous=previous,
                claims=state.claims,
                withdrawals=state.withdrawals,
                holds=tuple(state.holds.values()),
                waivers=tuple(state.waivers.values()),
                public=((seen.public if seen else None) or {}) if state.is_published else (),
                faults=self.hashes.faults(tag, listing),
            )
        )
        index = seen.index if seen is not None else None
        return replace(
            readiness,
            signatures=seen.signatures if seen is not None else (),
            signatures_required=self._require_signatures(tag),
            install_index=index.verdict if index else None,
        )

    def looks(self) -> tuple[object, ...]:
        """What was last seen of every release, as the objects themselves: each look
        replaces them (never changes them in place), so a view built from the same objects
        (compared with ``is``) is still true."""
        return tuple(
            part
            for name, s in sorted(self._seen.items())
            for part in (name, s.listing, s.previous, s.public, s.signatures, s.index, s.preflight)
        )

    def retained_tags(self) -> set[str]:
        return set(self._seen) | self.hashes.tags() | {t for t, _ in self._bundles}

    def forget_files(self, tag: ReleaseTag) -> None:
        """Drop the hashes and bundles cached for ``tag``'s staged files."""
        self.hashes.forget(tag)
        for key in [key for key in self._bundles if key[0] == str(tag)]:
            del self._bundles[key]

    def forget(self, tag: ReleaseTag) -> None:
        """Drop what was seen of ``tag`` (its files' caches stay until :meth:`forget_files`)."""
        self._seen.pop(str(tag), None)

    # -- looking -----------------------------------------------------------------------------

    async def observe(
        self, tag: ReleaseTag, state: ReleaseState, *, settle: bool
    ) -> tuple[Readiness, Listing]:
        """List staging now. With ``settle``, when anything differs from the last observation
        take a second listing a moment later, so a growing file shows as uploading. Raises
        :class:`Refusal` when nothing usable is staged, ``StorageError`` on storage faults."""
        listing = await self.list(tag)
        await self.list_public(tag, state)
        previous = self.last_listing(tag)
        # Compared in a worker thread: a listing may hold tens of thousands of entries.
        if settle and await asyncio.to_thread(operator.ne, previous, listing):
            await self._sleep(self._settle)
            previous, listing = listing, await self.list(tag)
        self.sight(tag).listing = listing
        self.sight(tag).previous = previous
        readiness = await self.check_signatures(await self.readiness(tag, listing, previous, state))
        return await self.check_index(readiness, listing), listing

    async def staged_tags(self) -> list[str]:
        """The names of the folders in staging (one listing)."""
        return await self.reads.run(
            "staging", "Listing the staging folder", self._conn.storage.staged_tags
        )

    async def snapshot(self, states: Sequence[ReleaseState]) -> Snapshot:
        """A scan's one look at every release of ``states`` not being published
        (``Storage.list_all_staging``; see :class:`Snapshot`). Empty when the look fails
        short of staging being down: each release is then listed on its own, its trouble
        its own."""
        tags = [s.tag for s in states if s.publishing is None]
        seen = {str(tag): self.last_listing_seen(tag) for tag in tags}
        listings: Mapping[str, Listing | None] = {}
        try:
            if tags:
                listings = await self.reads.run(
                    "scan",
                    "Listing the staging folders",
                    functools.partial(self._conn.storage.list_all_staging, tags),
                )
        except StagingUnreachable:
            raise
        except StorageError as err:
            log.warning("one look at every release failed (each is listed alone): %s", err)
        return Snapshot(listings, {str(s.tag): s for s in states}, seen)

    async def list_for_scan(self, state: ReleaseState, snapshot: Snapshot | None) -> Listing | None:
        """A scan's listing of ``state``'s release: from the scan's ``snapshot`` while that
        holds for it, else :meth:`list_staging` now."""
        listed = snapshot.listing(state, self.last_listing_seen(state.tag)) if snapshot else None
        return listed.listing if listed else await self.list_staging(state.tag)

    async def list_staging(self, tag: ReleaseTag) -> Listing | None:
        """Staging's listing of ``tag``, None when it has no folder there."""
        return await self.reads.run(
            f"list {tag}",
            f"Listing the staging folder of {tag}",
            functools.partial(self._conn.storage.list_staging, tag),
        )

    async def list(self, tag: ReleaseTag) -> Listing:
        """Staging's listing of ``tag``; raises :class:`Refusal` when there is none, or
        when its folder is not one (a link, unreadable). A folder with more entries than a
        walk lists is judged on those it listed."""
        storage = self._conn.storage
        listing = await self.list_staging(tag)
        if listing is None:
            raise Refusal(
                f"Nothing is staged for {tag} yet; upload the files to "
                f"{storage.staging_location(tag)} first."
            )
        if (folder := listing.get(RELEASE_FOLDER)) is not None and not is_cut(listing):
            where = storage.staging_location(tag)
            raise Refusal(f"The staging folder of {tag} ({where}) {folder.problem}.")
        return listing

    async def late(self, tag: ReleaseTag) -> bool:
        """Whether files are staged for ``tag``: for a published release, late files."""
        return bool(await self.list_staging(tag))

    async def list_public(self, tag: ReleaseTag, state: ReleaseState) -> None:
        """For a published release, list what is public (one listing per folder), so late
        files' readiness counts it."""
        if state.is_published:
            found = await self.reads.run(
                f"public {tag}",
                f"Listing the public folders of {tag}",
                functools.partial(
                    self._conn.storage.list_public, late.public_folders(self.profile, tag)
                ),
            )
            self.sight(tag).public = late.as_staged(self.profile, tag, found)

    async def check_index(
        self,
        readiness: Readiness,
        listing: Listing,
        *,
        fresh: bool = False,
    ) -> Readiness:
        """Judge the staged install index against the live one and the other releases of
        its role (those :attr:`neighbours_of` names; bot/service/windows_index.py)."""
        if self.index is None:
            return readiness
        staged = any(name in listing for name in self.index.rules.names)
        neighbours = self.neighbours_of(readiness.tag) if staged else ()
        check = await self.reads.run(
            f"index {readiness.tag}",
            f"Checking the install index staged for {readiness.tag}",
            functools.partial(
                self.index.check, readiness.tag, listing, fresh=fresh, neighbours=neighbours
            ),
        )
        self.sight(readiness.tag).index = check
        return replace(readiness, install_index=check.verdict if check else None)

    async def check_signatures(self, readiness: Readiness) -> Readiness:
        """Verify ``FILE.sigstore`` of every required file present (cached: a bundle is read
        only when it changed, a file hashed only when it changed). A file that cannot be the
        artifact is not checked (its role names it); one still being hashed is checked at a
        later look."""
        if self._conn.verifier is None:
            return readiness
        tag = readiness.tag
        listing = self.last_listing(tag) or {}
        signed = []
        for role in readiness.roles:
            for f in role.files:
                entry = listing.get(f.path)
                # Only a regular file is hashed: a FIFO or a link there is its own problem.
                regular = entry is not None and entry.regular
                usable = f.status is not FileStatus.UNUSABLE
                if f.required and regular and usable and self.profile.needs_signature(tag, f.path):
                    signed.append(f)
        with_bundle = [f.path for f in signed if self._bundle_entry(listing, f) is not None]
        looked = await self.hashes.look(tag, listing, with_bundle)
        results = [await self._signature(tag, f, listing, looked) for f in signed]
        self.sight(tag).signatures = tuple(results)
        return replace(readiness, signatures=tuple(results))

    def _bundle_entry(self, listing: Listing, f: FileReadiness) -> StagedFile | None:
        """The staged bundle of ``f`` worth reading: a regular file no larger than a bundle
        may be (a larger one is its role's problem, named there)."""
        entry = listing.get(f.path + BUNDLE_SUFFIX)
        if entry is None or not entry.regular:
            return None
        limit = min(MAX_BUNDLE, self.profile.size_limit(entry.path))
        return entry if entry.size <= limit else None

    async def _signature(
        self, tag: ReleaseTag, f: FileReadiness, listing: Listing, looked: Looked
    ) -> SignatureResult:
        verifier = self._conn.verifier
        assert verifier is not None
        path, bundle_path = f.path, f.path + BUNDLE_SUFFIX
        entry = listing.get(bundle_path)
        if entry is None or not entry.regular:
            return SignatureResult(path, SignatureStatus.MISSING, f"no {bundle_path}")
        if self._bundle_entry(listing, f) is None:
            return SignatureResult(path, SignatureStatus.MISSING, f"{bundle_path} is not a bundle")
        if (digest := looked.digests.get(path)) is None:
            why = looked.faults.get(path, "not checked yet: the file is still being hashed")
            return SignatureResult(path, SignatureStatus.INVALID, why)
        cached = self._bundles.get((str(tag), bundle_path))
        if cached is not None and cached[0] == entry.stamp:
            bundle = cached[1]
        else:
            try:
                bundle = await self.reads.run(
                    f"read {tag}",
                    f"Reading {shown(bundle_path)} staged for {tag}",
                    functools.partial(self._conn.storage.read, tag, bundle_path, MAX_BUNDLE),
                )
            except StagingUnreachable:
                raise
            except StorageError as err:  # this file's problem: the others are still checked
                why = f"{shown(bundle_path)} cannot be read: {str(err).rstrip('.')}"
                return SignatureResult(path, SignatureStatus.INVALID, why)
            self._bundles[(str(tag), bundle_path)] = (entry.stamp, bundle)
        return await asyncio.to_thread(verifier.verify, tag, path, digest, bundle)

    async def digest(
        self, tag: ReleaseTag, listing: Listing, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        """SHA-256 of staged files, re-hashing only files whose size or mtime moved, or
        every file when ``fresh`` (then waiting for them, within the read deadline). Raises
        :class:`StillHashing` when some are not hashed after the patience (their jobs go
        on), ``StorageError`` when one cannot be hashed."""
        if fresh:
            return await self.hashes.fresh(tag, listing, paths)
        looked = await self.hashes.look(tag, listing, paths)
        if looked.faults:
            path, why = next(iter(sorted(looked.faults.items())))
            raise StorageError(f"{shown(path)} {why}.")
        if looked.pending:
            raise StillHashing.of(tag, listing, looked)
        return looked.digests

    async def look_digests(self, tag: ReleaseTag, listing: Listing, paths: Sequence[str]) -> Looked:
        """The digests of ``paths`` known after a moment, without raising: what a scan
        decides on (a path still pending is decided at a later scan)."""
        return await self.hashes.look(tag, listing, paths)
