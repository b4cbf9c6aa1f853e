"""Waivers: the release manager lifts, for one release, the rule that blocks on one file or
one role, when the profile's model is wrong for that release (a build dropped, an extra
file). A waiver is a value; the rules for what may be waived live here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.domain.files import Listing
from bot.domain.profile import FileKind, Profile
from bot.domain.tags import ReleaseTag, quote_input
from bot.errors import RelbotError

MAX_TARGET = 300


class WaiverError(RelbotError):
    """What was asked cannot be waived; the message is the one-sentence reply."""


@dataclass(frozen=True)
class Waiver:
    """``target`` is a role (no /ready needed) or a path relative to the release's staging
    folder (a required file that will not come, or an unexpected file to publish anyway)."""

    target: str
    is_role: bool
    person: str
    reason: str = ""
    at: float = 0.0

    def describe(self) -> str:
        """``python-3.14.1-arm64.exe (waived by hugo: the ARM64 build broke)``."""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.target} (waived by {self.person}{why})"


def resolve_target(profile: Profile, tag: ReleaseTag, word: str, staged: Listing) -> bool:
    """Check that ``word`` can be waived for ``tag``; returns whether it names a role.

    A role must take part in ``tag``; a path must be a required file of ``tag`` (as
    ``relbot manifest`` prints it) or a file staged now that the profile does not expect.
    Raises :class:`WaiverError` with one sentence otherwise.
    """
    if word.lower() in profile.roles:
        role = word.lower()
        if role not in profile.roles_for(tag):
            raise WaiverError(f"{role} is not part of {tag}; there is nothing to waive.")
        return True
    if len(word) > MAX_TARGET or word.startswith("/") or ".." in word.split("/"):
        raise WaiverError(f"{quote_input(word)} is not a path inside {tag}'s staging folder.")
    if any(f.path == word for f in profile.expected(tag)):
        return False
    entry = staged.get(word)
    if entry is not None and not entry.has_partial_name:
        if profile.classify(tag, word).kind is FileKind.UNEXPECTED:
            return False
        raise WaiverError(f"{word} is already expected for {tag}; it needs no waiver.")
    raise WaiverError(
        f"{quote_input(word)} is neither a role, a required file of {tag} (relbot manifest "
        f"{tag} lists them) nor an unexpected file in its staging folder."
    )


def owner_of(profile: Profile, tag: ReleaseTag, path: str) -> str:
    """The role an unexpected but waived file is published with: the role whose staging
    sub-folder holds it (``docs/``), else the first role staging at the top."""
    roles = profile.roles_for(tag)
    nested = [
        r
        for r in roles
        if profile.spec.roles[r].folder and path.startswith(profile.spec.roles[r].folder + "/")
    ]
    if nested:
        return nested[0]
    return next((r for r in roles if not profile.spec.roles[r].folder), roles[0])


def waived_paths(waivers: Iterable[Waiver]) -> frozenset[str]:
    return frozenset(w.target for w in waivers if not w.is_role)


def waived_roles(waivers: Iterable[Waiver]) -> dict[str, Waiver]:
    return {w.target: w for w in waivers if w.is_role}
