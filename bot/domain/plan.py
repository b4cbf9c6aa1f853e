"""The publish plan: exactly which staged files become public, where, and in which order."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from bot.domain.files import Listing
from bot.domain.profile import Profile
from bot.domain.readiness import Readiness
from bot.domain.tags import ReleaseTag


@dataclass(frozen=True)
class PlanFile:
    """One file to publish. ``path`` is relative to the release's staging folder,
    ``target`` to the public root (``3.14.1/python-3.14.1.exe``, ``doc/3.14.1/...``)."""

    path: str
    target: str
    role: str
    size: int
    sha256: str

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "target": self.target,
            "role": self.role,
            "size": self.size,
            "sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PlanFile:
        return cls(
            path=str(data["path"]),
            target=str(data["target"]),
            role=str(data["role"]),
            size=int(str(data["size"])),
            sha256=str(data["sha256"]),
        )


@dataclass(frozen=True)
class PublishPlan:
    """Files in promotion order: docs, then artifacts, then indexes (``windows-*.json``)."""

    tag: ReleaseTag
    files: tuple[PlanFile, ...]
    waivers: tuple[str, ...] = ()  # the waivers in force, as shown (sorted)

    @property
    def digest(self) -> str:
        """SHA-256 over every (path, target, size, sha256) and every waiver: what a
        confirmation is bound to."""
        h = hashlib.sha256(str(self.tag).encode())
        for f in sorted(self.files, key=lambda f: f.path):
            h.update(f"\0{f.path}\0{f.target}\0{f.size}\0{f.sha256}".encode())
        for waiver in self.waivers:
            h.update(f"\0waiver\0{waiver}".encode())
        return h.hexdigest()

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    def by_role(self) -> dict[str, list[PlanFile]]:
        roles: dict[str, list[PlanFile]] = {}
        for f in self.files:
            roles.setdefault(f.role, []).append(f)
        return roles


def make_plan(
    profile: Profile, readiness: Readiness, listing: Listing, digests: Mapping[str, str]
) -> PublishPlan:
    """Build the plan from a publishable release: every present file of every role.

    ``digests`` must hold the SHA-256 of each such file.
    """
    tag = readiness.tag
    files = [
        PlanFile(
            path=f.path,
            target=profile.public_target(tag, role.role, f.path),
            role=role.role,
            size=listing[f.path].size,
            sha256=digests[f.path],
        )
        for role in readiness.roles
        if not role.excused
        for f in role.present
    ]

    def order(f: PlanFile) -> tuple[int, str]:
        if not f.target.startswith(profile.public_folder(tag) + "/"):
            return (0, f.path)  # docs go first: nothing links to them before the announcement
        return (2 if profile.is_index(f.path) else 1, f.path)

    waivers = tuple(sorted(w.describe() for w in readiness.waivers))
    return PublishPlan(tag, tuple(sorted(files, key=order)), waivers)
