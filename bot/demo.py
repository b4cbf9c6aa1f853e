"""The demo release that the built-in local default stages on first start.

Its files are stand-ins and the demo runs offline, so it cannot be signed with Sigstore: the
built-in default opts out of signatures in the open (``"signatures": {"require": False}`` in
``bot.config.DEFAULT_CONFIG``), and its summary and plan say signatures are not required.
"""

from __future__ import annotations

from pathlib import Path

from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag

DEMO_TAG = ReleaseTag.parse("3.14.1")


def stage_demo(staging: Path, profile: Profile, tag: ReleaseTag = DEMO_TAG) -> list[Path]:
    """Write a small stand-in for every required file of ``tag``; returns the files written."""
    written = []
    for expected in profile.expected(tag):
        path = staging / str(tag) / expected.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"relbot demo: {expected.path} ({expected.role})\n", encoding="utf-8")
        written.append(path)
    return written
