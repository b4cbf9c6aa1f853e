"""Readiness: what a staging listing plus the claims and holds say about a release."""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.claims import Claim, Hold, Withdrawal
from bot.domain.files import Listing, StagedFile, is_cut
from bot.domain.profile import FileKind, Profile
from bot.domain.signing import SignatureResult, SignatureStatus
from bot.domain.tags import ReleaseTag
from bot.domain.text import shown, size_text
from bot.domain.waivers import Waiver, owner_of, waived_paths, waived_roles
from bot.domain.windows_index import IndexVerdict

NAMED = 20  # entries a summary or a refusal names before it counts the rest


def described(files: Sequence[FileReadiness], limit: int = NAMED) -> str:
    """``a (missing), b (empty)``: the first ``limit`` files, then how many more (a
    staging folder may hold tens of thousands of entries; a sentence names a few)."""
    named = [f.describe() for f in files[:limit]]
    if len(files) > limit:
        named.append(f"{len(files) - limit} more")
    return ", ".join(named)


class FileStatus(StrEnum):
    PRESENT = "present"
    MISSING = "missing"
    UPLOADING = "uploading"
    EMPTY = "empty"
    UNEXPECTED = "unexpected"
    NOT_REGULAR = "not a regular file"
    UNUSABLE = "unusable"  # it cannot be the artifact (too large, sparse, unreadable)
    NOT_LISTED = "not listed"  # absent from a listing cut at its entry budget
    PUBLIC = "public"  # published earlier: counts as delivered, never staged again
    ALREADY_PUBLIC = "already public"  # staged again under a name already public: a blocker


@dataclass(frozen=True)
class FileReadiness:
    path: str
    status: FileStatus
    role: str | None = None
    required: bool = False
    size: int | None = None
    note: str = ""  # storage's reason when the entry could not be taken as a file

    def describe(self) -> str:
        """``python-3.14.1.exe (missing)``; names are escaped (no newline or escape code)."""
        return f"{shown(self.path) or 'the release folder'} ({self.note or self.status.value})"


@dataclass(frozen=True)
class RoleReadiness:
    role: str
    files: tuple[FileReadiness, ...]
    claim: Claim | None = None
    withdrawal: Withdrawal | None = None
    waiver: Waiver | None = None  # the RM waived the whole role for this release

    @property
    def excused(self) -> bool:
        """Waived and not claimed: it blocks nothing and none of its files are published."""
        return self.waiver is not None and self.claim is None

    @property
    def problems(self) -> tuple[FileReadiness, ...]:
        return tuple(
            f for f in self.files if f.status not in (FileStatus.PRESENT, FileStatus.PUBLIC)
        )

    @property
    def already_public(self) -> bool:
        """Every file of the role was published earlier and nothing new is staged."""
        return bool(self.files) and all(f.status is FileStatus.PUBLIC for f in self.files)

    @property
    def complete(self) -> bool:
        """Every required file is there, non-empty and settled, and nothing of it is bad."""
        return not self.problems

    @property
    def present(self) -> tuple[FileReadiness, ...]:
        return tuple(f for f in self.files if f.status is FileStatus.PRESENT)


@dataclass(frozen=True)
class Readiness:
    """The state of one release: per role, stray files, holds, and what blocks publishing."""

    tag: ReleaseTag
    roles: tuple[RoleReadiness, ...]
    stray: tuple[FileReadiness, ...] = ()
    holds: tuple[Hold, ...] = ()
    signatures: tuple[SignatureResult, ...] = ()  # one per required file, when checked
    signatures_required: bool = False
    branch_status: str | None = None  # from the release cycle (None: not listed)
    waivers: tuple[Waiver, ...] = ()
    hard_linked: tuple[str, ...] = ()  # staged files with another name somewhere (a note)
    install_index: IndexVerdict | None = None  # the staged install index, when checked
    cut: bool = False  # the listing stopped at its entry budget: entries were not listed

    def role(self, name: str) -> RoleReadiness:
        return next(r for r in self.roles if r.role == name)

    @property
    def blockers(self) -> list[str]:
        """One short phrase per reason ``/publish`` must refuse; empty when publishable."""
        found = []
        for role in self.roles:
            if role.excused:
                continue
            if role.problems:
                found.append(f"{role.role}: {described(role.problems)}")
            elif role.claim is None and not role.already_public:
                found.append(f"{role.role}: nobody said /ready {role.role} {self.tag}")
        found += [f"staging: {f.describe()}" for f in self.stray[:NAMED]]
        if len(self.stray) > NAMED:
            found.append(f"staging: {len(self.stray) - NAMED} more unexpected entries")
        found += [f"held by {h.person}" + (f": {h.reason}" if h.reason else "") for h in self.holds]
        if self.signatures_required:  # a missing one is signed at the confirmation
            found += [f"signature of {s.describe()}" for s in self.invalid_signatures]
        if self.install_index is not None:
            found += self.install_index.blockers
        return found

    @property
    def unsigned(self) -> tuple[SignatureResult, ...]:
        """Required files whose signature is missing or invalid."""
        return tuple(s for s in self.signatures if s.status is not SignatureStatus.VALID)

    @property
    def invalid_signatures(self) -> tuple[SignatureResult, ...]:
        """Files with a staged signature that does not verify (a missing one is not)."""
        return tuple(s for s in self.signatures if s.status is SignatureStatus.INVALID)

    @property
    def signature_problems(self) -> tuple[SignatureResult, ...]:
        """The unsigned files worth naming: a bad signature always, a missing one only when
        signatures are required (a release that does not sign would drown in them)."""
        return tuple(
            s
            for s in self.unsigned
            if s.status is SignatureStatus.INVALID or self.signatures_required
        )

    @property
    def publishable(self) -> bool:
        return not self.blockers

    @property
    def claimed_roles(self) -> int:
        return sum(1 for role in self.roles if role.claim is not None)


def compute_readiness(
    profile: Profile,
    tag: ReleaseTag,
    listing: Listing,
    *,
    previous: Listing | None = None,
    claims: Mapping[str, Claim] | None = None,
    withdrawals: Mapping[str, Withdrawal] | None = None,
    holds: tuple[Hold, ...] = (),
    waivers: tuple[Waiver, ...] = (),
    public: Collection[str] = (),
    faults: Mapping[str, str] | None = None,
) -> Readiness:
    """Fold a staging listing (and the one before it, to see growing files) into readiness.

    A file is "uploading" while it has a partial-upload name or it is absent from, or its
    size/mtime differs from, ``previous``; a file merely being recent never counts.
    A file larger than the profile allows, a sparse one, and one in ``faults`` (path →
    why the bot could not hash it as it is now) is "unusable", with what to do; a folder
    named like a required file is "not a regular file"; a required file absent from a
    listing cut at its entry budget is "not listed", not "missing".
    A waived required file may be missing; a waived unexpected file counts as its role's.
    ``public`` (staging paths already published, for late files) count as delivered, and
    staging one of them again is a problem.
    """
    claims = claims or {}
    withdrawals = withdrawals or {}
    faults = faults or {}
    per_role: dict[str, list[FileReadiness]] = {role: [] for role in profile.roles_for(tag)}
    required = {f.path: f.role for f in profile.expected(tag, listing.keys())}
    excused = waived_paths(waivers)
    cut = is_cut(listing)
    folders: set[str] | None = None  # the folders the listing holds, worked out when needed

    def judged(entry: StagedFile) -> tuple[FileStatus, str]:
        fault = faults.get(entry.path)
        return _judge(entry, previous, profile.size_limit(entry.path), fault)

    for path, role in required.items():
        entry = listing.get(path)
        if entry is None and path in public:
            per_role[role].append(FileReadiness(path, FileStatus.PUBLIC, role, True))
            continue
        if entry is None and path in excused:
            continue  # waived: it will not come
        if entry is None:
            folders = _folders(listing) if folders is None else folders
            status, note = FileStatus.NOT_LISTED if cut else FileStatus.MISSING, ""
            if path in folders:  # files were uploaded into a folder of that name
                status, note = FileStatus.NOT_REGULAR, _A_FOLDER
        else:
            status, note = judged(entry)
        if path in public:  # staged again (when it is not, the loop went on above)
            status = FileStatus.ALREADY_PUBLIC
        per_role[role].append(
            FileReadiness(
                path, status, role, path not in excused, entry.size if entry else None, note
            )
        )
    stray = []
    classify = profile.classifier(tag)
    for path, entry in sorted(listing.items()):
        if path in required or entry.is_empty_folder:
            continue
        kind = classify(path)
        status, note = judged(entry)
        if path in public:
            status = FileStatus.ALREADY_PUBLIC
        waivable = not entry.problem and not entry.has_partial_name
        if path in excused and waivable and kind.kind is FileKind.UNEXPECTED:
            owner = owner_of(profile, tag, path)
            per_role[owner].append(FileReadiness(path, status, owner, False, entry.size, note))
            continue
        # An unexpected file is the one kind without a role (the profile classifies so).
        if entry.problem or entry.has_partial_name or kind.role is None:
            stray.append(
                FileReadiness(
                    path,
                    status if status is not FileStatus.PRESENT else FileStatus.UNEXPECTED,
                    size=entry.size,
                    note=note,
                )
            )
        else:
            per_role[kind.role].append(
                FileReadiness(path, status, kind.role, False, entry.size, note)
            )
    by_role = waived_roles(waivers)
    if public:  # late files: a waived role that now stages files says /ready for them
        by_role = {r: w for r, w in by_role.items() if not _stages_anything(per_role[r])}
    roles = tuple(
        RoleReadiness(
            role, tuple(files), claims.get(role), withdrawals.get(role), by_role.get(role)
        )
        for role, files in per_role.items()
    )
    linked = tuple(path for path, entry in sorted(listing.items()) if entry.links > 1)
    return Readiness(
        tag,
        roles,
        tuple(stray),
        holds,
        branch_status=profile.status(tag),
        waivers=waivers,
        hard_linked=linked,
        cut=cut,
    )


def _stages_anything(files: list[FileReadiness]) -> bool:
    return any(f.status not in (FileStatus.MISSING, FileStatus.PUBLIC) for f in files)


_A_FOLDER = "a folder, not a regular file; remove the folder and upload the file"
REDO = "remove it and upload the real file"


def sparse_note(size: int, allocated: int) -> str:
    """Why a sparse file of ``size`` bytes (``allocated`` stored) is unusable, what to do."""
    return (
        f"{size_text(size)} on paper but {size_text(allocated)} on disk: a sparse file, "
        f"not an upload; {REDO}"
    )


def _folders(listing: Listing) -> set[str]:
    """Every folder that holds an entry of ``listing``: the parents of each path (an empty
    folder is listed as ``x/``, whose parent is ``x`` itself)."""
    found: set[str] = set()
    for path in listing:
        folder = posixpath.dirname(path)
        while folder:
            found.add(folder)
            folder = posixpath.dirname(folder)
    return found


def _judge(
    entry: StagedFile, previous: Listing | None, limit: int, fault: str | None
) -> tuple[FileStatus, str]:
    """An entry's status and the note that says why, when storage or the bot found one."""
    if not entry.regular:
        return FileStatus.NOT_REGULAR, entry.problem
    if entry.size > limit:  # before "uploading": it can never become the artifact
        size, most = size_text(entry.size), size_text(limit)
        return FileStatus.UNUSABLE, f"{size}, more than the {most} such a file may be; {REDO}"
    if entry.has_partial_name:
        return FileStatus.UPLOADING, ""
    if previous is not None:
        before = previous.get(entry.path)
        if before is None or before.stamp != entry.stamp:
            return FileStatus.UPLOADING, ""
    if entry.is_sparse:
        assert entry.allocated is not None
        return FileStatus.UNUSABLE, sparse_note(entry.size, entry.allocated)
    if fault is not None:  # the note as the bot's hashing left it, with what to do
        return FileStatus.UNUSABLE, fault
    if entry.size == 0:
        return FileStatus.EMPTY, ""
    return FileStatus.PRESENT, ""
