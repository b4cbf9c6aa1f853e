"""Release tags such as ``3.13.1`` or ``3.14.0rc2``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from bot.errors import TagError

# Pre-release serials start at 1 (3.14.0a1, never 3.14.0rc0).
_TAG_RE = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:(a|b|rc)([1-9]\d{0,2}))?", re.ASCII)


class Stage(StrEnum):
    ALPHA = "a"
    BETA = "b"
    RC = "rc"
    FINAL = ""


_STAGE_ORDER = {Stage.ALPHA: 0, Stage.BETA: 1, Stage.RC: 2, Stage.FINAL: 3}


@dataclass(frozen=True)
class ReleaseTag:
    """A parsed release tag. ``str(tag)`` gives it back in canonical form."""

    major: int
    minor: int
    micro: int
    stage: Stage = Stage.FINAL
    serial: int = 0

    @classmethod
    def parse(cls, text: str) -> ReleaseTag:
        """Parse ``3.14.0rc2``; raises :class:`TagError` with a sentence on anything else."""
        match = _TAG_RE.fullmatch(text)
        if match is None:
            raise TagError(
                f"{quote_input(text)} is not a release tag; write it like 3.14.1 or 3.14.0rc2."
            )
        major, minor, micro, stage, serial = match.groups()
        return cls(
            int(major),
            int(minor),
            int(micro),
            Stage(stage or ""),
            int(serial) if serial else 0,
        )

    @property
    def version(self) -> str:
        """The normalized version ``X.Y.Z``: the public folder all prereleases share."""
        return f"{self.major}.{self.minor}.{self.micro}"

    @property
    def branch(self) -> str:
        """The branch ``X.Y``, whose release managers own this tag."""
        return f"{self.major}.{self.minor}"

    @property
    def is_final(self) -> bool:
        return self.stage is Stage.FINAL

    @property
    def is_rc(self) -> bool:
        return self.stage is Stage.RC

    @property
    def is_prerelease(self) -> bool:
        return not self.is_final

    @property
    def prerelease_suffix(self) -> str:
        """``rc1`` for ``3.14.0rc1``, empty for a final."""
        return "" if self.is_final else f"{self.stage.value}{self.serial}"

    def at_least(self, branch: str) -> bool:
        """Whether this tag's branch is ``branch`` (``"3.14"``) or newer."""
        major, minor = (int(part) for part in branch.split("."))
        return (self.major, self.minor) >= (major, minor)

    def __str__(self) -> str:
        return self.version + self.prerelease_suffix

    def _key(self) -> tuple[int, int, int, int, int]:
        return (self.major, self.minor, self.micro, _STAGE_ORDER[self.stage], self.serial)

    def __lt__(self, other: ReleaseTag) -> bool:
        """Release order: 3.14.0a1 < 3.14.0b1 < 3.14.0rc1 < 3.14.0 < 3.14.1."""
        return self._key() < other._key()


_CODE_LIKE = re.compile(r"[A-Z0-9]{6,}")


def quote_input(text: str, limit: int = 40) -> str:
    """Quote user input for an error message: shortened, control characters escaped, and
    anything that looks like a confirmation code masked (refusals never show one)."""
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    shown = _CODE_LIKE.sub("<…>", shown)
    return repr(shown) if not shown.isprintable() else f"'{shown}'"
