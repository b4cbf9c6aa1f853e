"""Late files: a published release accepts additions. What is already public is read from
the public folders of the release and mapped back to the staging paths it came from, so
readiness can count it and nothing already public is staged again."""

from __future__ import annotations

import posixpath

from bot.domain.files import Listing, StagedFile
from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag


def public_folders(profile: Profile, tag: ReleaseTag) -> list[str]:
    """The folders under the public root that ``tag``'s roles publish to."""
    return sorted({profile.public_folder(tag, role) for role in profile.roles_for(tag)})


def as_staged(profile: Profile, tag: ReleaseTag, public: Listing) -> dict[str, StagedFile]:
    """Public entries (keyed by path under the public root) keyed instead by the staging
    path a role would stage them at (``doc/3.14.1/x`` → ``docs/x``)."""
    found: dict[str, StagedFile] = {}
    for role in profile.roles_for(tag):
        prefix = profile.public_folder(tag, role) + "/"
        inner = profile.spec.roles[role].folder
        for path, entry in public.items():
            if path.startswith(prefix):
                rest = path[len(prefix) :]
                staged = f"{inner}/{rest}" if inner else rest
                found.setdefault(staged, StagedFile(staged, entry.size, entry.mtime, entry.regular))
    return found


def announcement(plan: PublishPlan, publisher: str, links: dict[str, str]) -> str:
    """What the channel is told when late files of a published release are public."""
    names = ", ".join(posixpath.basename(f.target) for f in plan.files[:10])
    more = f" and {len(plan.files) - 10} more" if len(plan.files) > 10 else ""
    where = "".join(f" {label.capitalize()}: {url}" for label, url in links.items())
    count = f"{len(plan.files)} file" + ("" if len(plan.files) == 1 else "s")
    return f"{plan.tag} has {count} added: {names}{more}; confirmed by {publisher}.{where}"
