"""A release as the bot last saw it: what the read-only views (the board, ``/status`` with no
tag, ``relbot wait``) are built from, without listing or hashing anything."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.domain.history import ReleaseState
from bot.domain.readiness import Readiness


@dataclass(frozen=True)
class Observed:
    """A release as the bot last saw it, for read-only views (the board): the state folded
    from the log now, readiness from the last listing a scan or command took, and why
    ``/publish`` would refuse (empty: it would offer a plan)."""

    state: ReleaseState
    readiness: Readiness | None  # None once published, or before staging was first listed
    digests: Mapping[str, str]  # SHA-256 of staged files hashed while unchanged since
    blockers: tuple[str, ...]
