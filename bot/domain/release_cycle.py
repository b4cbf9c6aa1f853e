"""The release cycle: each branch's status (``3.12`` → ``security``), as python.org's
release-cycle JSON gives it. Pure: parsing and questions, no I/O."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from bot.errors import ConfigError

# python/peps' own statuses; "planned" (a branch whose development has not started) was
# published for 3.16 until May 2026, and nothing is released from such a branch.
STATUSES = ("planned", "feature", "prerelease", "bugfix", "security", "end-of-life")
# Branches that get only source (and, for finals, docs): no binaries are built any more.
SOURCE_ONLY = frozenset({"security", "end-of-life"})


@dataclass(frozen=True)
class BranchCycle:
    """One branch of the release cycle."""

    branch: str  # "3.14"
    status: str  # one of STATUSES
    first_release: str = ""
    end_of_life: str = ""

    @property
    def source_only(self) -> bool:
        """Whether releases of this branch ship only the source tarballs (and docs)."""
        return self.status in SOURCE_ONLY


@dataclass(frozen=True)
class ReleaseCycle:
    """Every branch the release cycle lists."""

    branches: Mapping[str, BranchCycle]

    def statuses(self) -> dict[str, str]:
        """branch → status, what a profile needs."""
        return {name: b.status for name, b in self.branches.items()}

    def get(self, branch: str) -> BranchCycle | None:
        return self.branches.get(branch)


def parse_release_cycle(text: str | bytes, origin: str) -> ReleaseCycle:
    """Parse release-cycle JSON (``{"3.14": {"status": "bugfix", ...}, ...}``).

    Raises :class:`ConfigError` with one sentence naming ``origin`` when it is not JSON, not
    an object of branches, or a branch has no known status.
    """
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise ConfigError(f"release_cycle: {origin} is not valid JSON ({err}).") from err
    except RecursionError as err:
        raise ConfigError(f"release_cycle: {origin} is nested too deeply to be one.") from err
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"release_cycle: {origin} is not an object of branches.")
    branches = {}
    for name, entry in data.items():
        status = entry.get("status") if isinstance(entry, dict) else None
        if status not in STATUSES:
            raise ConfigError(
                f"release_cycle: {origin}: branch {name!r} has no known status "
                f"(one of {', '.join(STATUSES)})."
            )
        branches[str(name)] = BranchCycle(
            str(name),
            status,
            str(entry.get("first_release", "")),
            str(entry.get("end_of_life", "")),
        )
    return ReleaseCycle(branches)
