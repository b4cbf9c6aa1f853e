"""Release day's team, for the tests over each chat platform: five releases of five branches on
one day, three release managers, the Windows and macOS experts. Two bugfix branches (with
Windows and macOS files) and three security branches (source and docs only), as in the pinned
release cycle."""

from __future__ import annotations

from pathlib import Path

from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.ports import Journal
from tests.pinned import RELEASE_CYCLE_LINE
from tests.windows_index_data import LIVE_VERSIONS, catalog_bytes, index_bytes, manifest_bytes

#: Each release of the day, and the name of its release manager.
DAY = {
    "3.15.1": "thomas",
    "3.14.2": "hugo",
    "3.13.11": "pablo",
    "3.12.13": "pablo",
    "3.11.15": "pablo",
}

#: The bugfix releases of the day: Windows files, and one install index built for both.
BUGFIX = ("3.15.1", "3.14.2")
INDEX = ("index-windows.json", "index-windows.json.cat")

_PEOPLE = {
    "hugo": 'rm = ["3.14"]\nroles = ["source", "docs"]',
    "thomas": 'rm = ["3.15"]',
    "pablo": 'rm = ["3.11", "3.12", "3.13"]',
    "steve": 'roles = ["windows"]',
    "ned": 'roles = ["macos"]',
}


def day_team_toml(platform_table: str, platform: str, ids: dict[str, str]) -> str:
    """The day's config: local folders, ``platform_table`` (``[slack]`` or ``[discord]``
    with its keys) and each person with their ID on ``platform``."""
    people = "".join(
        f'\n[people.{name}]\n{rules}\n{platform} = "{ids[name]}"\n'
        for name, rules in _PEOPLE.items()
    )
    return f"""{RELEASE_CYCLE_LINE}profile = "cpython"
state = "data/state.db"
confirm_timeout = 600

[storage]
kind = "local"
staging = "data/staging"
public = "data/public"

{platform_table.strip()}
{people}"""


def day_public(profile: Profile) -> set[str]:
    """Where the profile puts every file of the day's releases once they are public."""
    public = set()
    for tag in DAY:
        parsed = ReleaseTag.parse(tag)
        public |= {profile.public_target(parsed, e.role, e.path) for e in profile.expected(parsed)}
    return public


def announced(texts: list[str]) -> list[str]:
    """The tag of each announcement among the channel's ``texts``."""
    return [t.split(" ", 1)[0] for t in texts if " is published: " in t]


def stage_shared_index(staging: Path, public: Path) -> bytes:
    """The live install index before the day, and one index built for both bugfix releases
    (their installs, then the live ones), staged with its catalog for each of them beside
    its manifest; returns the shared index's bytes."""
    public.mkdir(parents=True, exist_ok=True)
    live = index_bytes(*LIVE_VERSIONS)
    (public / INDEX[0]).write_bytes(live)
    (public / INDEX[1]).write_bytes(catalog_bytes(live))
    shared = index_bytes(*BUGFIX, *LIVE_VERSIONS)
    for tag in BUGFIX:
        (staging / tag / f"windows-{tag}.json").write_bytes(manifest_bytes(tag))
        (staging / tag / INDEX[0]).write_bytes(shared)
        (staging / tag / INDEX[1]).write_bytes(catalog_bytes(shared))
    return shared


def made_live_once(store: Journal, public: Path, shared: bytes) -> None:
    """The shared index is live with its catalog, and one publish made it so: the other
    left it to the last (or found it live already)."""
    assert (public / INDEX[0]).read_bytes() == shared
    assert (public / INDEX[1]).read_bytes() == catalog_bytes(shared)
    steps = [store.release(ReleaseTag.parse(tag)).steps_done["index"] for tag in BUGFIX]
    assert sum(s == f"{INDEX[0]}, {INDEX[1]} replaced" for s in steps) == 1, steps
    assert all(
        s.endswith("replaced") or s.startswith(("waits for", "index already")) for s in steps
    )
