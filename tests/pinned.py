"""The release cycle tests read: a pinned local copy, so no test ever reaches the network."""

from __future__ import annotations

from pathlib import Path

RELEASE_CYCLE = Path(__file__).parent / "data" / "release-cycle.json"
RELEASE_CYCLE_LINE = f'release_cycle = "{RELEASE_CYCLE}"\n'
