"""Hashing staged files beside the command loop and the scans, never in their way.

A file is hashed by a job of its own (a task whose read runs in a thread, with the read
deadline of bot/service/deadlines.py): one job per file at a time, several files of one
look hashed together. A caller waits a moment (``patience``) for what it started, then
goes on with what is known: a command says it is checking and tells the result when it is
known, a scan decides at the next scan. Digests are kept by the (size, mtime) they were
computed at, and so is why a file could not be hashed (a fault: not a regular file any more,
a sparse file the server found), until the file changes.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from bot.domain.files import Listing
from bot.domain.readiness import REDO, sparse_note
from bot.domain.tags import ReleaseTag
from bot.domain.text import shown, size_text
from bot.errors import SparseFile, StagingUnreachable, StorageError
from bot.service.deadlines import Deadlines, ReadTimedOut

PATIENCE = 2.0  # seconds a command or a scan waits for the hashes it started

Stamp = tuple[int, float]
Key = tuple[str, str]  # (tag, path)
Digest = Callable[[ReleaseTag, Sequence[str], bool], dict[str, str]]  # (tag, paths, fresh)


class StillHashing(StorageError):
    """Files are still being hashed: their digests are known once ``done`` is."""

    def __init__(
        self, tag: ReleaseTag, paths: Sequence[str], size: int, done: asyncio.Future[None]
    ) -> None:
        many = f"{len(paths)} files" if len(paths) != 1 else "1 file"
        super().__init__(f"Checking {many} staged for {tag} ({size_text(size)}) takes a while.")
        self.tag = tag
        self.paths = tuple(paths)
        self.size = size
        self.done = done

    @classmethod
    def of(cls, tag: ReleaseTag, listing: Listing, looked: Looked) -> StillHashing:
        """What ``looked`` left pending (entries of ``listing``), as the error to raise."""
        size = sum(listing[p].size for p in looked.pending)
        return cls(tag, looked.pending, size, looked.done)


@dataclass(frozen=True)
class Looked:
    """What one look found: digests known now, paths still being hashed, and faults (path →
    why it could not be hashed as it is now)."""

    digests: dict[str, str]
    pending: tuple[str, ...]
    faults: dict[str, str]
    done: asyncio.Future[None]  # done once every pending path's job is


class Hashes:
    """Digests of staged files, each computed by a job beside the caller."""

    def __init__(self, digest: Digest, reads: Deadlines, patience: float = PATIENCE) -> None:
        self._digest = digest
        self._reads = reads
        self.patience = patience
        self._digests: dict[Key, tuple[Stamp, str]] = {}
        self._faults: dict[Key, tuple[Stamp, str]] = {}
        self._running: dict[Key, asyncio.Task[None]] = {}

    # -- what is known (no I/O) --------------------------------------------------------------

    def known(self, tag: ReleaseTag, listing: Listing) -> dict[str, str]:
        """Digests of ``tag``'s staged files unchanged since they were hashed."""
        name = str(tag)
        return {
            path: digest
            for (t, path), (stamp, digest) in self._digests.items()
            if t == name and path in listing and listing[path].stamp == stamp
        }

    def faults(self, tag: ReleaseTag, listing: Listing) -> dict[str, str]:
        """Why files of ``tag`` as staged now could not be hashed (path → reason)."""
        name = str(tag)
        return {
            path: reason
            for (t, path), (stamp, reason) in self._faults.items()
            if t == name and path in listing and listing[path].stamp == stamp
        }

    def busy(self, tag: ReleaseTag) -> list[str]:
        """The paths of ``tag`` being hashed now."""
        return sorted(path for t, path in self._running if t == str(tag))

    def tags(self) -> set[str]:
        return {t for t, _ in self._digests} | {t for t, _ in self._faults}

    def forget(self, tag: ReleaseTag) -> None:
        """Drop what is known of ``tag``'s files (a job under way still ends)."""
        for cache in (self._digests, self._faults):
            for key in [key for key in cache if key[0] == str(tag)]:
                del cache[key]

    # -- looking -----------------------------------------------------------------------------

    async def look(self, tag: ReleaseTag, listing: Listing, paths: Collection[str]) -> Looked:
        """The digests of ``paths`` (entries of ``listing``): those known, and a job started
        for the others (none for a path whose job still runs, none for a known fault);
        waits :attr:`patience` seconds for the jobs. Raises what a job raised that is not a
        storage error (those are faults)."""
        wanted = [p for p in dict.fromkeys(paths) if self._unknown(tag, p, listing)]
        start = [p for p in wanted if (str(tag), p) not in self._running]
        if start:
            stamps = {p: listing[p].stamp for p in start}
            job = asyncio.create_task(self._job(tag, stamps), name=f"relbot hash {tag}")
            for path in start:
                self._running[(str(tag), path)] = job
        jobs = {self._running[(str(tag), p)] for p in wanted if (str(tag), p) in self._running}
        if jobs:
            await asyncio.wait(jobs, timeout=self.patience)
        for job in jobs:  # a job's own failure (a storage error is a fault) is the caller's
            if job.done() and not job.cancelled() and (error := job.exception()) is not None:
                raise error
        done = _all_done({job for job in jobs if not job.done()})
        known = self.known(tag, listing)
        faults = {p: why for p, why in self.faults(tag, listing).items() if p in paths}
        pending = tuple(p for p in wanted if p not in known and p not in faults)
        return Looked({p: known[p] for p in paths if p in known}, pending, faults, done)

    async def fresh(
        self, tag: ReleaseTag, listing: Listing, paths: Sequence[str]
    ) -> dict[str, str]:
        """The digests of ``paths`` read afresh now, waiting for them (a confirmation:
        a same-size rewrite within one mtime tick must not slip through); raises what the
        read raised."""
        todo = list(dict.fromkeys(paths))
        hashed = await self._reads.run(
            f"digest {tag}",
            f"Hashing {_files(len(todo))} staged for {tag}",
            functools.partial(self._digest, tag, todo, True),
        )
        for path, digest in hashed.items():
            self._digests[(str(tag), path)] = (listing[path].stamp, digest)
            self._faults.pop((str(tag), path), None)
        return hashed

    def _unknown(self, tag: ReleaseTag, path: str, listing: Listing) -> bool:
        stamp = listing[path].stamp
        for cache in (self._digests, self._faults):
            hit = cache.get((str(tag), path))
            if hit is not None and hit[0] == stamp:
                return False
        return True

    async def _job(self, tag: ReleaseTag, stamps: dict[str, Stamp]) -> None:
        try:
            await self._hash(tag, stamps)
        finally:
            for path in stamps:
                if self._running.get((str(tag), path)) is asyncio.current_task():
                    del self._running[(str(tag), path)]

    async def _hash(self, tag: ReleaseTag, stamps: dict[str, Stamp]) -> None:
        paths = list(stamps)
        what = f"Hashing {shown_paths(paths)} staged for {tag}"
        try:
            hashed = await self._reads.run(
                f"digest {tag} {paths[0]}", what, functools.partial(self._digest, tag, paths, False)
            )
        except StagingUnreachable:
            return  # nothing learnt of the files: the next look asks again
        except ReadTimedOut as err:  # never tried again file by file: each would wait as long
            for path, stamp in stamps.items():
                self._faults[(str(tag), path)] = (stamp, _reason(err))
            return
        except StorageError as err:
            if len(paths) > 1:  # which file it was: each on its own
                for path in paths:
                    await self._hash(tag, {path: stamps[path]})
                return
            self._faults[(str(tag), paths[0])] = (stamps[paths[0]], _reason(err))
            return
        for path, digest in hashed.items():
            self._digests[(str(tag), path)] = (stamps[path], digest)
            self._faults.pop((str(tag), path), None)


def shown_paths(paths: Sequence[str]) -> str:
    """``Python-3.14.1.tgz`` or ``3 files``: what a job hashes, in a sentence."""
    return shown(paths[0]) if len(paths) == 1 else _files(len(paths))


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


def _reason(err: StorageError) -> str:
    """A hashing error as a file's note: the storage's sentence without its full stop."""
    if isinstance(err, SparseFile):  # found by the server: said as a listing would say it
        return sparse_note(err.size, err.allocated)
    return f"cannot be hashed: {str(err).rstrip('.')}; {REDO}"


def _all_done(jobs: set[asyncio.Task[None]]) -> asyncio.Future[None]:
    """A future done once every job in ``jobs`` is (at once when there are none)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    if not jobs:
        done.set_result(None)
        return done

    def finished(_: object) -> None:
        if all(job.done() for job in jobs) and not done.done():
            done.set_result(None)

    for job in jobs:
        job.add_done_callback(finished)
    return done
