"""Claims and holds: what people said about a release."""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.files import SnapshotFile


@dataclass(frozen=True)
class Claim:
    """``/ready ROLE TAG``: PERSON vouches for these exact files."""

    role: str
    person: str
    at: float
    snapshot: tuple[SnapshotFile, ...]


@dataclass(frozen=True)
class Withdrawal:
    """Why a role's last claim no longer stands."""

    role: str
    by: str
    reason: str
    at: float


@dataclass(frozen=True)
class Hold:
    """``/hold TAG reason``: nothing is published until it is lifted."""

    person: str
    reason: str
    at: float
