"""The release cycle without the network: the file the config names, or for a URL the last
copy read from it (kept next to the state file), else the copy shipped in the package, so
the bot starts and works offline. Read when the config is loaded; the network is
:mod:`bot.pydotorg.release_cycle`'s."""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from bot.domain.release_cycle import ReleaseCycle, parse_release_cycle
from bot.errors import ConfigError
from bot.regular_files import UnreadableFile, read_regular_file

DEFAULT_URL = "https://peps.python.org/api/release-cycle.json"
CACHE_NAME = "release-cycle.json"  # next to the state file
# bot/data/release-cycle.json is what python/peps generates (release_management/serialize.py
# create_release_cycle, from python-releases.toml) at commit ba4deeb of 2026-08-22; statuses
# are as of that day, and `relbot run` and `relbot check` read the live copy over it.
SHIPPED_AS_OF = "2026-08-22"
MAX_BYTES = 1 << 20  # the real file is a few kB


@dataclass(frozen=True)
class CycleCopy:
    """A release cycle and where it came from: ``origin`` says which copy, ``as_of`` when
    that copy was read from its source (seconds since the epoch)."""

    cycle: ReleaseCycle
    origin: str
    as_of: float

    def describe(self, now: float) -> str:
        """``the cached copy of URL, read 3 days ago`` (for ``relbot check``)."""
        return f"{self.origin}, read {_age(now - self.as_of)}"


def is_url(source: str) -> bool:
    """Whether ``source`` is written as a URL (``SCHEME://…``) rather than a file path; the
    config allows only https:// (or http:// to this machine)."""
    return re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", source) is not None


def local_copy(source: str, base: Path, cache: Path) -> CycleCopy:
    """The release cycle without the network: the file ``source`` names (relative to
    ``base``), or for a URL the last copy cached in ``cache``, else the shipped copy.

    Raises :class:`ConfigError` when ``source`` is a file that cannot be read or parsed.
    """
    if not is_url(source):
        path = Path(source).expanduser()
        path = path if path.is_absolute() else base / path
        try:
            data = read_regular_file(path, MAX_BYTES)
            stamp = path.stat().st_mtime
        except UnreadableFile as err:
            raise ConfigError(f"release_cycle: {err}.") from err
        except OSError as err:
            raise ConfigError(f"release_cycle: cannot read {path} ({err.strerror}).") from err
        return CycleCopy(parse_release_cycle(data, str(path)), f"the file {path}", stamp)
    try:
        cycle = parse_release_cycle(read_regular_file(cache, MAX_BYTES), str(cache))
        return CycleCopy(cycle, f"the cached copy of {source}", cache.stat().st_mtime)
    except (OSError, UnreadableFile, ConfigError):
        return shipped_copy()


def shipped_copy() -> CycleCopy:
    """The copy that ships with relbot (always there)."""
    text = resources.files("bot").joinpath("data", CACHE_NAME).read_bytes()
    as_of = calendar.timegm(time.strptime(SHIPPED_AS_OF, "%Y-%m-%d"))
    cycle = parse_release_cycle(text, "the shipped copy")
    return CycleCopy(cycle, "the copy shipped with relbot", as_of)


def _age(seconds: float) -> str:
    if seconds < 120:
        return "just now"
    if seconds < 2 * 3600:
        return f"{seconds // 60:.0f} minutes ago"
    if seconds < 2 * 86400:
        return f"{seconds // 3600:.0f} hours ago"
    return f"{seconds // 86400:.0f} days ago"
