"""What storage reports about files: listings, digests and claim snapshots."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PARTIAL_SUFFIXES = (".part", ".tmp", ".partial", ".filepart")
EMPTY_FOLDER = "an empty folder"
RELEASE_FOLDER = ""  # the key of a problem with the release's staging folder itself
# How the problem of a release folder with more entries than a walk lists begins: the
# entries listed are still judged (the rest is "not listed"), unlike another folder problem.
CROWDED = "holds more than"
# A file this large whose allocated blocks are under 1/SPARSE_RATIO of its size is sparse:
# holes, not an upload (a compressed artifact is dense; a parallel upload that writes its
# chunks out of order is sparse only while it grows, and a growing file is "uploading").
SPARSE_FROM = 64 << 20
SPARSE_RATIO = 8


@dataclass(frozen=True)
class StagedFile:
    """One entry of a staging listing. ``path`` is relative to the release's staging folder."""

    path: str
    size: int
    mtime: float
    regular: bool = True  # False for symlinks, sockets, devices: never promoted
    # Why this entry can never be published, when storage could not take it as a file: an
    # unreadable or empty folder, a name that is not printable UTF-8, a symlinked release
    # folder (path ""). Such an entry has ``regular=False``.
    problem: str = ""
    links: int = 1  # hard links to the file (1 where storage cannot tell, as over SFTP)
    allocated: int | None = None  # bytes stored on disk (None where storage cannot tell)

    @property
    def stamp(self) -> tuple[int, float]:
        """Size and mtime: what says a file changed without reading it."""
        return (self.size, self.mtime)

    @property
    def is_empty_folder(self) -> bool:
        """An empty folder: listed so that no promotion carries it along; nothing to judge.
        Only the walk gives an entry that problem (storage.listing.empty_folder), always with
        the folder's path, which ends with ``/``."""
        return self.problem == EMPTY_FOLDER

    @property
    def is_sparse(self) -> bool:
        """Whether the file is mostly holes (see :func:`sparse`)."""
        return self.allocated is not None and sparse(self.size, self.allocated)

    @property
    def has_partial_name(self) -> bool:
        """Whether the name is one uploaders use while a transfer is under way."""
        name = self.path.rsplit("/", 1)[-1]
        return name.startswith(".") or name.endswith(PARTIAL_SUFFIXES)


Listing = Mapping[str, StagedFile]
"""A release's staging folder, recursively: path → entry."""


def sparse(size: int, allocated: int) -> bool:
    """Whether a file of ``size`` bytes with ``allocated`` bytes on disk is mostly holes:
    it cannot be the artifact, and hashing it reads zeros for nothing."""
    return size >= SPARSE_FROM and allocated * SPARSE_RATIO < size


def is_cut(listing: Listing) -> bool:
    """Whether the listing stopped at the walk's entry budget (some entries not listed)."""
    folder = listing.get(RELEASE_FOLDER)
    return folder is not None and folder.problem.startswith(CROWDED)


@dataclass(frozen=True)
class SnapshotFile:
    """A file as it was when a role claimed ready: the identity a claim is bound to."""

    path: str
    size: int
    mtime: float
    sha256: str

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size, "mtime": self.mtime, "sha256": self.sha256}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> SnapshotFile:
        return cls(
            path=str(data["path"]),
            size=int(str(data["size"])),
            mtime=float(str(data["mtime"])),
            sha256=str(data["sha256"]),
        )


def changed_since(
    snapshot: tuple[SnapshotFile, ...], listing: Listing, digests: Mapping[str, str]
) -> list[str]:
    """The snapshot's paths that are gone or whose content differs now.

    A file whose size and mtime are unchanged is taken as unchanged (no re-hashing);
    for the others, ``digests`` must hold the current SHA-256.
    """
    changed = []
    for old in snapshot:
        now = listing.get(old.path)
        if now is None or not now.regular:
            changed.append(old.path)
            continue
        if now.size != old.size:
            changed.append(old.path)  # other bytes, whatever they hash to
        elif now.mtime != old.mtime and digests.get(old.path) != old.sha256:
            changed.append(old.path)
    return changed


def needs_digest(snapshot: tuple[SnapshotFile, ...], listing: Listing) -> list[str]:
    """The snapshot's paths whose mtime moved but not their size, so only their content
    can tell (a file of another size changed: it is never hashed for that, whatever its
    size)."""
    return [
        old.path
        for old in snapshot
        if (now := listing.get(old.path)) is not None
        and now.regular
        and now.size == old.size
        and now.mtime != old.mtime
    ]
