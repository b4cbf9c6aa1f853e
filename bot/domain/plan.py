"""The publish plan: exactly which staged files become public, where, and in which order."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from bot.domain.announcement import Announcement
from bot.domain.files import Listing
from bot.domain.profile import Profile
from bot.domain.readiness import Readiness
from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import ABSENT, IndexRules, index_target


@dataclass(frozen=True)
class PlanFile:
    """One file to publish. ``path`` is relative to the release's staging folder,
    ``target`` to the public root (``3.14.1/python-3.14.1.exe``, ``doc/3.14.1/...``)."""

    path: str
    target: str
    role: str
    size: int
    sha256: str
    # For a file that replaces a live one (the install index): the live file's SHA-256 when
    # the plan was made, or "absent". Empty for every other file (they never replace).
    replaces: str = ""

    @property
    def is_replacement(self) -> bool:
        """Whether publishing this file replaces the live copy (one atomic rename, after
        every other file) instead of adding a file that must not exist yet."""
        return bool(self.replaces)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "path": self.path,
            "target": self.target,
            "role": self.role,
            "size": self.size,
            "sha256": self.sha256,
        }
        if self.replaces:
            data["replaces"] = self.replaces
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PlanFile:
        return cls(
            path=str(data["path"]),
            target=str(data["target"]),
            role=str(data["role"]),
            size=int(str(data["size"])),
            sha256=str(data["sha256"]),
            replaces=str(data.get("replaces", "")),
        )


@dataclass(frozen=True)
class PublishPlan:
    """Files in promotion order: docs, then artifacts, then indexes (``windows-*.json``)."""

    tag: ReleaseTag
    files: tuple[PlanFile, ...]
    waivers: tuple[str, ...] = ()  # the waivers in force, as shown (sorted)
    # The forum topic the publish posts, as shown to the RM (None: nothing is posted).
    announcement: Announcement | None = None
    # The unpublished releases whose installs the staged install index also lists: it goes
    # live with the last of them to publish (bot/domain/windows_index.py). Not in the digest:
    # one published since the plan only lets the index go live sooner, and none can join
    # the list while the index's bytes (in the digest) stay: every install they list was
    # live, this release's or of a release known then (else the plan was refused).
    index_shared_with: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        """SHA-256 over every (path, target, size, sha256), every waiver and the
        announcement's text: what a confirmation is bound to."""
        h = hashlib.sha256(str(self.tag).encode())
        for f in sorted(self.files, key=lambda f: f.path):
            h.update(f"\0{f.path}\0{f.target}\0{f.size}\0{f.sha256}".encode())
            if f.replaces:  # bound to the live copy it replaces, as seen by /publish
                h.update(f"\0{f.replaces}".encode())
        for waiver in self.waivers:
            h.update(f"\0waiver\0{waiver}".encode())
        if self.announcement is not None:  # the text posted is the text confirmed
            h.update(f"\0announcement\0{self.announcement.sha256}".encode())
        return h.hexdigest()

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def promoted(self) -> PublishPlan:
        """The plan without the files that replace live ones: what promotion moves (no
        clobber). The others are published after it, each by one atomic replace."""
        return PublishPlan(self.tag, tuple(f for f in self.files if not f.is_replacement))

    @property
    def replacements(self) -> tuple[PlanFile, ...]:
        """The files that replace live ones, in publishing order (the index, then its
        catalog)."""
        return tuple(f for f in self.files if f.is_replacement)

    def by_role(self) -> dict[str, list[PlanFile]]:
        roles: dict[str, list[PlanFile]] = {}
        for f in self.files:
            roles.setdefault(f.role, []).append(f)
        return roles


def make_plan(
    profile: Profile,
    readiness: Readiness,
    listing: Listing,
    digests: Mapping[str, str],
    live: Mapping[str, str] | None = None,
) -> PublishPlan:
    """Build the plan from a publishable release: every present file of every role.

    ``digests`` must hold the SHA-256 of each such file; ``live`` the SHA-256 (or "absent")
    of the live copy of each staged install-index file, which the plan replaces. An index
    shared with unpublished releases (the readiness's verdict says which) goes live with the
    last of them.
    """
    tag = readiness.tag
    rules = IndexRules.from_profile(profile)
    files = [
        PlanFile(
            path=f.path,
            target=index_target(rules, role.role, f.path)
            or profile.public_target(tag, role.role, f.path),
            role=role.role,
            size=listing[f.path].size,
            sha256=digests[f.path],
            replaces=(live or {}).get(f.path, ABSENT)
            if index_target(rules, role.role, f.path)
            else "",
        )
        for role in readiness.roles
        if not role.excused
        for f in role.present
    ]

    def order(f: PlanFile) -> tuple[int, str]:
        if f.is_replacement:  # after everything: the index, then its catalog (NAME.cat)
            return (3, f.path)
        if not f.target.startswith(profile.public_folder(tag) + "/"):
            return (0, f.path)  # docs go first: nothing links to them before the announcement
        return (2 if profile.is_index(f.path) else 1, f.path)

    waivers = tuple(sorted(w.describe() for w in readiness.waivers))
    shared = readiness.install_index.shared_with if readiness.install_index else ()
    replacing = any(f.is_replacement for f in files)
    return PublishPlan(
        tag, tuple(sorted(files, key=order)), waivers, index_shared_with=shared if replacing else ()
    )
