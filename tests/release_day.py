"""Release day's team, for the tests over each chat platform: five releases of five branches on
one day, three release managers, the Windows and macOS experts. Two bugfix branches (with
Windows and macOS files) and three security branches (source and docs only), as in the pinned
release cycle."""

from __future__ import annotations

from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from tests.pinned import RELEASE_CYCLE_LINE

#: Each release of the day, and the name of its release manager.
DAY = {
    "3.15.1": "thomas",
    "3.14.2": "hugo",
    "3.13.11": "pablo",
    "3.12.13": "pablo",
    "3.11.15": "pablo",
}

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
