"""The announcement of a release on a forum (discuss.python.org): its title in CPython's form
and its text, drafted from a template (the frame, kept in the config) and the release
manager's own words. Pure: the caller reads the template and lists the files.

What the publish posts is the :class:`Announcement` stored in the confirmed plan, so it is
byte for byte the text the RM was shown (its SHA-256 is part of the plan's digest).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.domain.profile import expand
from bot.domain.tags import ReleaseTag, Stage
from bot.errors import RelbotError

# Discourse's defaults (site settings min_first_post_length, max_post_length): a text outside
# them is refused by the forum, so it is refused here first. Its title limits (15 to 255) need
# no check: title() is 28 to 49 characters for any tag.
MIN_BODY = 20
MAX_BODY = 32_000
MAX_WORDS = 5_000  # the RM's own part, as typed in one chat command

PLACEHOLDERS = (
    "title",  # Python 3.14.1 is now available!
    "tag",  # 3.14.0rc2
    "version",  # 3.14.0
    "branch",  # 3.14
    "release_page",  # the python.org page of the release
    "changelog",  # the changelog's URL
    "files",  # a Markdown list of the downloadable files, linked
    "words",  # the RM's own words (/announce TAG TEXT…)
)
_PLACEHOLDER_RE = re.compile(r"\{([a-z_]+)\}")
# Typed text keeps its line breaks and tabs; any other control character is refused.
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

# The frame used when the config names no template: links first, then the files, then thanks.
DEFAULT_TEMPLATE = """\
{words}

* Release page: {release_page}
* Changelog: {changelog}

## Downloads

{files}

Thanks to all of the many volunteers who help make Python development and these releases \
possible! Please consider supporting our efforts by volunteering yourself or through \
organisation contributions to the Python Software Foundation.
"""
# Every branch has one, prereleases included (docs/release/TAG/ exists for rc and final only).
DEFAULT_CHANGELOG = "https://docs.python.org/{branch}/whatsnew/changelog.html"

_STAGE_WORDS = {Stage.ALPHA: "alpha", Stage.BETA: "beta", Stage.RC: "release candidate"}


class AnnouncementError(RelbotError):
    """The announcement cannot be drafted as configured (a sentence saying what to fix)."""


@dataclass(frozen=True)
class Announcement:
    """A forum topic: its title and its Markdown body (Discourse's ``raw``)."""

    title: str
    raw: str

    @property
    def text(self) -> str:
        """Title and body as shown to the RM: what :attr:`sha256` covers."""
        return f"{self.title}\n\n{self.raw}"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def short_hash(self) -> str:
        """The first 12 hex digits, as the plan and ``/announce`` show them."""
        return self.sha256[:12]

    def to_json(self) -> dict[str, str]:
        return {"title": self.title, "raw": self.raw}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Announcement:
        return cls(str(data["title"]), str(data["raw"]))


@dataclass(frozen=True)
class Topic:
    """A forum topic that exists, and where it is."""

    id: int
    title: str
    url: str


@dataclass(frozen=True)
class Frame:
    """What the text is drafted from, besides the RM's words: the template (Markdown with
    placeholders), the changelog URL template, the release page, and where the files are
    served (``https://www.python.org/ftp/python/``)."""

    template: str = DEFAULT_TEMPLATE
    changelog: str = DEFAULT_CHANGELOG
    release_page: str = ""
    files_url: str = ""
    sidecars: tuple[str, ...] = ()  # suffixes of files that are not listed (.sigstore, .asc)

    @property
    def wants_words(self) -> bool:
        """Whether the template has a place for the RM's words."""
        return "{words}" in self.template


def title(tag: ReleaseTag) -> str:
    """The topic's title in CPython's form: ``Python 3.14.1 is now available!`` for a final,
    ``Python 3.15.0 beta 2 is here!`` for a prerelease."""
    if tag.is_final:
        return f"Python {tag} is now available!"
    return f"Python {tag.version} {_STAGE_WORDS[tag.stage]} {tag.serial} is here!"


def unknown_placeholders(template: str) -> list[str]:
    """The ``{name}`` placeholders of ``template`` that drafting would not fill."""
    return sorted({m for m in _PLACEHOLDER_RE.findall(template) if m not in PLACEHOLDERS})


def check_template(template: str, origin: str) -> None:
    """Raise :class:`AnnouncementError` naming ``origin`` when ``template`` has a placeholder
    drafting does not know."""
    unknown = unknown_placeholders(template)
    if unknown:
        names = ", ".join("{" + name + "}" for name in unknown)
        known = ", ".join("{" + name + "}" for name in PLACEHOLDERS)
        raise AnnouncementError(f"{origin} has unknown placeholders {names}; use {known}.")


def words_problem(words: str) -> str:
    """Why the RM's ``words`` cannot go into an announcement ("" when they can)."""
    if not words.strip():
        return "Your words are empty; type them after the tag."
    if len(words) > MAX_WORDS:
        return f"Your words are {len(words):,} characters; at most {MAX_WORDS:,} fit."
    if _CONTROL_RE.search(words):
        return "Your words hold a control character; type plain text (line breaks are fine)."
    return ""


def file_list(frame: Frame, tag: ReleaseTag, folder: str, targets: Iterable[str]) -> str:
    """The downloadable files of the release as a Markdown list of links, by name: those
    directly in its public ``folder`` (``3.14.1``), without sidecars (signatures, SBOMs)."""
    prefix = folder + "/"
    names = sorted(
        target[len(prefix) :]
        for target in targets
        if target.startswith(prefix)
        and "/" not in target[len(prefix) :]
        and not target.endswith(frame.sidecars)
    )
    if not names:
        return f"No files of {tag} are published with this announcement."
    return "\n".join(f"* [{name}]({frame.files_url}{prefix}{name})" for name in names)


def draft(
    frame: Frame, tag: ReleaseTag, folder: str, targets: Sequence[str], words: str
) -> Announcement:
    """The announcement of ``tag``: ``frame``'s template filled in (``targets``: the public
    paths of the files published, ``folder`` their release folder). Raises
    :class:`AnnouncementError` when the text falls outside the forum's limits."""
    heading = title(tag)
    values = {
        "title": heading,
        "tag": str(tag),
        "version": tag.version,
        "branch": tag.branch,
        "release_page": frame.release_page,
        "changelog": expand(frame.changelog, tag),
        "files": file_list(frame, tag, folder, targets),
        "words": words.strip(),
    }
    # One pass: a value that happens to contain "{files}" is never expanded again.
    raw = _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), frame.template)
    raw = re.sub(r"\n{3,}", "\n\n", raw).strip() + "\n"
    if len(raw) < MIN_BODY:
        raise AnnouncementError(
            f"The announcement's text is {len(raw)} characters; the forum wants at least "
            f"{MIN_BODY}: add to the template or to your words."
        )
    if len(raw) > MAX_BODY:
        raise AnnouncementError(
            f"The announcement's text is {len(raw):,} characters; the forum takes at most "
            f"{MAX_BODY:,}: shorten the template or your words."
        )
    return Announcement(heading, raw)
