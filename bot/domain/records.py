"""The python.org release-file records a publish should have, and how to get there.

Pure rules, no I/O: which published file becomes which ``ReleaseFile`` record (the profile's
``[pydotorg]`` table, parsed by :class:`PydotorgSettings`), the consistency python.org demands
(one URL and one slug per record, at most one download button per OS), and the
create-before-delete :func:`schedule` that turns the records python.org has into those wanted.
The HTTP side is :class:`bot.pydotorg.registry.PydotorgRegistry`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile, expand
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RegistryError

_BRANCH_RE = re.compile(r"\d+\.\d+")

Record = dict[str, Any]
"""A ReleaseFile as JSON: what is POSTed, or what the API lists."""


# --- settings: the profile's [pydotorg] table ------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileRule(_Strict):
    """One row of the file → record mapping; ``match`` is searched in the file name."""

    match: str
    name: str
    os: str
    download_button: bool = False
    description: str = ""
    description_since: dict[str, str] = Field(default_factory=dict)

    @field_validator("match")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(f"{value!r} is not a Python regular expression ({err})") from err
        return value

    @field_validator("description_since")
    @classmethod
    def _branches(cls, value: dict[str, str]) -> dict[str, str]:
        for branch in value:
            if not _BRANCH_RE.fullmatch(branch):
                raise ValueError(f"{branch!r} is not a branch like 3.14")
        return value

    def description_for(self, tag: ReleaseTag) -> str:
        """The description of ``tag``'s record: the newest ``description_since`` that applies."""
        applicable = [b for b in self.description_since if tag.at_least(b)]
        newest = max(applicable, key=lambda b: tuple(int(p) for p in b.split(".")), default=None)
        text = self.description if newest is None else self.description_since[newest]
        return expand(text, tag)


class PydotorgSettings(_Strict):
    """The profile's ``[pydotorg]`` table: how published files map to release-file records."""

    release: str = "Python {tag}"
    files_url: str
    names: str = ""  # a file name must match this first ({tag} escaped)
    source_os: str = ""
    sidecars: dict[str, str] = Field(default_factory=dict)
    rules: list[FileRule]
    purge: list[str] = Field(default_factory=list)  # read by bot/pydotorg/cdn.py

    @field_validator("files_url")
    @classmethod
    def _slash(cls, value: str) -> str:
        return value if value.endswith("/") else value + "/"

    @classmethod
    def from_profile(cls, profile: Profile) -> PydotorgSettings:
        """Parse ``profile``'s ``[pydotorg]`` table; raises :class:`ConfigError` naming the key."""
        try:
            return cls.model_validate(profile.spec.pydotorg)
        except ValidationError as err:
            first = err.errors()[0]
            key = ".".join(str(part) for part in ("pydotorg", *first["loc"]))
            raise ConfigError(f"profile {profile.name}: {key}: {first['msg']}.") from err

    def release_name(self, tag: ReleaseTag) -> str:
        """The name of ``tag``'s Release object (``Python 3.14.1``)."""
        return expand(self.release, tag)

    @property
    def os_slugs(self) -> tuple[str, ...]:
        """Every OS slug the rules use, in rule order."""
        return tuple(dict.fromkeys(rule.os for rule in self.rules))

    def rule_for(self, tag: ReleaseTag, name: str) -> FileRule | None:
        """The rule registering file ``name`` of ``tag``, or None if it is not registered."""
        if name.endswith(tuple(self.sidecars)):
            return None
        if self.names:
            gate = self.names.replace("{tag}", re.escape(str(tag)))
            if not re.search(gate, name):
                return None
        return next((rule for rule in self.rules if re.search(rule.match, name)), None)


# --- the records a plan should have -----------------------------------------------------------


@dataclass(frozen=True)
class PlannedRecord:
    """The ReleaseFile record one published file should have; ``os`` is the OS slug."""

    target: str
    name: str
    slug: str
    os: str
    description: str
    is_source: bool
    url: str
    sha256_sum: str
    filesize: int
    download_button: bool
    sidecars: tuple[tuple[str, str], ...] = ()  # (field, URL) for the sidecars published

    def to_json(self, release_uri: str, os_uri: str) -> Record:
        """The body to POST to ``downloads/release_file/``."""
        return {
            "name": self.name,
            "slug": self.slug,
            "os": os_uri,
            "release": release_uri,
            "description": self.description,
            "is_source": self.is_source,
            "url": self.url,
            "sha256_sum": self.sha256_sum,
            "filesize": self.filesize,
            "download_button": self.download_button,
            **dict(self.sidecars),
        }


def slug_for(tag: ReleaseTag) -> str:
    """The release part of a record slug, as add_to_pydotorg.py makes it (``3140-rc2``)."""
    compact = tag.version.replace(".", "")
    return f"{compact}-{tag.prerelease_suffix}" if tag.is_prerelease else compact


def make_slug(text: str) -> str:
    """Spaces to ``-``, then only ``[a-zA-Z0-9_-]`` kept (add_to_pydotorg.py's make_slug)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "", text.replace(" ", "-"))


def planned_records(
    settings: PydotorgSettings, profile: Profile, plan: PublishPlan
) -> list[PlannedRecord]:
    """The records ``plan`` should have, in plan order.

    Only files directly in the release's public folder whose name a rule matches are
    registered (docs, MSI sub-folders and sidecars are not). Raises :class:`RegistryError`
    when two files would get the same URL or slug, or one OS two download buttons.
    """
    tag = plan.tag
    folder = profile.public_folder(tag) + "/"
    targets = {f.target for f in plan.files}
    records: list[PlannedRecord] = []
    for file in plan.files:
        name = file.target.removeprefix(folder)
        if not file.target.startswith(folder) or "/" in name:
            continue
        rule = settings.rule_for(tag, name)
        if rule is None:
            continue
        url = settings.files_url + file.target
        records.append(
            PlannedRecord(
                target=file.target,
                name=rule.name,
                slug=slug_for(tag) + "-" + make_slug(rule.name)[:40],
                os=rule.os,
                description=rule.description_for(tag),
                is_source=rule.os == settings.source_os,
                url=url,
                sha256_sum=file.sha256,
                filesize=file.size,
                download_button=rule.download_button,
                sidecars=tuple(
                    (api_field, url + suffix)
                    for suffix, api_field in settings.sidecars.items()
                    if file.target + suffix in targets
                ),
            )
        )
    check_consistent(records)
    return records


def check_consistent(records: Sequence[PlannedRecord]) -> None:
    """Raise :class:`RegistryError` when two records share a slug or URL, or one OS has two
    download buttons: python.org would refuse the second, midway through a sync."""
    for what in ("slug", "url"):
        seen: dict[str, str] = {}
        for record in records:
            if (value := str(getattr(record, what))) in seen:
                raise RegistryError(
                    f"{seen[value]} and {record.target} would get the same python.org {what} "
                    f"{value!r}; fix the profile's [pydotorg] rules."
                )
            seen[value] = record.target
    buttons: dict[str, str] = {}
    for record in records:
        if record.download_button:
            if record.os in buttons:
                raise RegistryError(
                    f"{buttons[record.os]} and {record.target} would both be the download "
                    f"button of OS {record.os!r}; python.org allows one per OS."
                )
            buttons[record.os] = record.target


# --- the writes from what is there to what is wanted -----------------------------------------


@dataclass(frozen=True)
class Create:
    """POST ``record``; ``replaces`` when a record with its URL existed before."""

    record: Record
    replaces: bool


@dataclass(frozen=True)
class Delete:
    """DELETE ``record``; ``replaced`` when a record with its URL is created right after."""

    record: Record
    replaced: bool


def schedule(
    existing: Sequence[Record], wanted: Mapping[str, Record], sidecar_fields: Sequence[str]
) -> tuple[list[Create | Delete], int]:
    """The writes turning ``existing`` into ``wanted`` (keyed by URL), in a safe order, and
    how many records stay unchanged.

    Order: records that collide with nothing are created first; a record that must be
    replaced (API v1 has no PUT/PATCH, and ``url`` and ``slug`` are unique, so the new one
    cannot exist beside the old) is deleted right before its replacement is created,
    together with any stale record holding its slug or its OS's download button; the
    remaining stale records go last. So the release loses at most the records one
    replacement collides with, for one request, and never drops to zero files unless
    every record it has must be replaced at once.
    """
    by_url = {str(record.get("url")): record for record in existing}
    keep = {
        url
        for url, record in wanted.items()
        if url in by_url and not differs(by_url[url], record, sidecar_fields)
    }
    doomed = [record for record in existing if str(record.get("url")) not in keep]
    creates = [record for url, record in wanted.items() if url not in keep]

    def blockers(new: Record) -> list[Record]:
        return [old for old in doomed if _collides(old, new)]

    steps: list[Create | Delete] = []
    blocked = []
    for new in creates:
        if blockers(new):
            blocked.append(new)
        else:
            steps.append(Create(new, replaces=False))
    for new in blocked:
        for old in blockers(new):
            doomed.remove(old)
            steps.append(Delete(old, replaced=old.get("url") == new["url"]))
        steps.append(Create(new, replaces=str(new["url"]) in by_url))
    steps.extend(Delete(old, replaced=False) for old in doomed)
    return steps, len(keep)


def _collides(old: Record, new: Record) -> bool:
    """Whether ``new`` cannot be created while ``old`` exists (python.org's unique fields)."""
    return (
        old.get("url") == new["url"]
        or old.get("slug") == new["slug"]
        or bool(
            new["download_button"]
            and old.get("download_button")
            and _uri_path(old.get("os")) == _uri_path(new["os"])
        )
    )


def differs(existing: Record, wanted: Record, sidecar_fields: Sequence[str]) -> bool:
    """Whether ``existing`` must be replaced to become ``wanted``.

    Fields the server does not list cannot be compared and are taken as equal; a sidecar
    field missing from ``wanted`` must be blank on the server.
    """
    for key in dict.fromkeys((*wanted, *sidecar_fields)):
        if key not in existing:
            continue
        have, want = existing[key], wanted.get(key)
        if key in ("os", "release"):
            have, want = _uri_path(have), _uri_path(want)
        elif key == "filesize":
            have, want = str(have), str(want)
        if (have or "") != (want or ""):
            return True
    return False


def _uri_path(value: object) -> str:
    # The path only: the API may list a resource by absolute URL or by path.
    return unquote(urlsplit(str(value)).path)


# python.org's ReleaseFile columns: an IntegerField file size, 200-character names, slugs and
# URLs. A record past them is answered with a 500 that looks like a passing failure.
MAX_FILESIZE = 2**31
MAX_LENGTH = 200


def unstorable(records: Sequence[PlannedRecord]) -> list[str]:
    """Why python.org's database cannot hold some of ``records``: one sentence each."""
    problems = []
    for record in records:
        if not 0 <= record.filesize < MAX_FILESIZE:
            problems.append(
                f"{record.target} is {record.filesize} bytes; python.org stores a file size "
                f"below 2**31 ({MAX_FILESIZE} bytes) only, so it cannot be registered"
            )
        for field, value in (
            ("name", record.name),
            ("slug", record.slug),
            ("url", record.url),
            *record.sidecars,
        ):
            if len(value) > MAX_LENGTH:
                problems.append(
                    f"the python.org {field} of {record.target} would be {len(value)} "
                    f"characters long; python.org stores {MAX_LENGTH} at most (shorten the "
                    "file name or the profile's [pydotorg] rule)"
                )
    return problems
