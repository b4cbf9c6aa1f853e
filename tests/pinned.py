"""The release cycle tests read: a pinned local copy, so no test ever reaches the network."""

from __future__ import annotations

from pathlib import Path

RELEASE_CYCLE = Path(__file__).parent / "data" / "release-cycle.json"
RELEASE_CYCLE_LINE = f'release_cycle = "{RELEASE_CYCLE}"\n'
# The cpython profile requires Sigstore signatures; a team whose tests are about something else
# opts out in its config, as an operator would (and `relbot check` warns about).
NO_SIGNATURES = "\n[signatures]\nrequire = false  # these tests are not about signatures\n"
