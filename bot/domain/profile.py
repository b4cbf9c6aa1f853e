"""Profiles: which roles produce which files for a release. Profiles are data (TOML)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError

_BRANCH_RE = re.compile(r"\d+\.\d+")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileRule(_Strict):
    """One file name (or pattern) with the branches it applies to."""

    name: str
    since: str | None = None
    until: str | None = None

    @field_validator("since", "until")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        if value is not None and not _BRANCH_RE.fullmatch(value):
            raise ValueError(f"{value!r} is not a branch like 3.14")
        return value

    def applies_to(self, tag: ReleaseTag) -> bool:
        if self.since is not None and not tag.at_least(self.since):
            return False
        return not (self.until is not None and _newer_than(tag, self.until))


class SidecarRule(_Strict):
    suffix: str
    since: str | None = None
    until: str | None = None

    def applies_to(self, tag: ReleaseTag) -> bool:
        return FileRule(name="", since=self.since, until=self.until).applies_to(tag)


class RoleSpec(_Strict):
    description: str = ""
    folder: str = ""  # sub-folder of the release's staging folder
    public: str = "{version}"  # folder under the public root
    stages: tuple[Literal["a", "b", "rc", "final"], ...] = ("a", "b", "rc", "final")
    required: list[FileRule]
    allowed: list[FileRule] = Field(default_factory=list)


class ProfileSpec(_Strict):
    name: str
    description: str = ""
    indexes: list[str] = Field(default_factory=list)
    sidecars: list[SidecarRule] = Field(default_factory=list)
    roles: dict[str, RoleSpec]
    signers: dict[str, tuple[str, str]] = Field(default_factory=dict)
    # Free-form tables read by the port that needs them (bot/registry.py reads [pydotorg]).
    pydotorg: dict[str, Any] = Field(default_factory=dict)
    links: dict[str, str] = Field(default_factory=dict)  # label → URL template, announced
    # The Windows install-manager index (bot/domain/windows_index.py reads it): file, role,
    # manifest. Published last, at the public root, by replacing the live copy.
    install_index: dict[str, str] = Field(default_factory=dict)


class FileKind(StrEnum):
    REQUIRED = "required"
    ALLOWED = "allowed"
    SIDECAR = "sidecar"
    UNEXPECTED = "unexpected"


@dataclass(frozen=True)
class Classification:
    """What a staged path is for a given tag: its kind and the role it belongs to."""

    kind: FileKind
    role: str | None = None


@dataclass(frozen=True)
class ExpectedFile:
    role: str
    path: str  # relative to the release's staging folder


class Profile:
    """A loaded profile. Answers, for a tag, which files each role must or may stage."""

    def __init__(self, spec: ProfileSpec) -> None:
        self.spec = spec
        self.name = spec.name

    @property
    def roles(self) -> tuple[str, ...]:
        """Every role the profile knows, in display order."""
        return tuple(self.spec.roles)

    def roles_for(self, tag: ReleaseTag) -> tuple[str, ...]:
        """The roles that take part in ``tag`` (docs only for rc and final, say)."""
        stage = tag.stage.value or "final"
        return tuple(name for name, role in self.spec.roles.items() if stage in role.stages)

    def expected(self, tag: ReleaseTag) -> tuple[ExpectedFile, ...]:
        """The required files of ``tag``, role by role in profile order."""
        return tuple(
            ExpectedFile(role, _join(self.spec.roles[role].folder, expand(rule.name, tag)))
            for role in self.roles_for(tag)
            for rule in self.spec.roles[role].required
            if rule.applies_to(tag)
        )

    def classify(self, tag: ReleaseTag, path: str) -> Classification:
        """Say whether ``path`` is required, allowed or a sidecar of ``tag``, and whose."""
        return self._classifier(tag).get(path) or self._classify_slow(tag, path)

    def public_folder(self, tag: ReleaseTag, role: str | None = None) -> str:
        """The folder under the public root that ``role``'s files go to (default: artifacts)."""
        spec = self.spec.roles.get(role or "")
        return expand(spec.public if spec else "{version}", tag)

    def public_target(self, tag: ReleaseTag, role: str, path: str) -> str:
        """Where a staged ``path`` of ``role`` goes under the public root."""
        folder = self.spec.roles[role].folder
        inner = path[len(folder) + 1 :] if folder else path
        return f"{self.public_folder(tag, role)}/{inner}"

    def is_index(self, path: str) -> bool:
        """Whether ``path`` is an index file, to be published after everything it names."""
        name = path.rsplit("/", 1)[-1]
        return any(_pattern_re(pattern).fullmatch(name) for pattern in self.spec.indexes)

    def links(self, tag: ReleaseTag) -> dict[str, str]:
        """Where people find a published release (the announcement carries these)."""
        return {label: expand(url, tag) for label, url in self.spec.links.items()}

    def signer(self, tag: ReleaseTag) -> tuple[str, str] | None:
        """The (identity, issuer) expected to sign ``tag``, if the profile names one."""
        return self.spec.signers.get(tag.branch)

    def _classifier(self, tag: ReleaseTag) -> Mapping[str, Classification]:
        return {
            file.path: Classification(FileKind.REQUIRED, file.role) for file in self.expected(tag)
        }

    def _classify_slow(self, tag: ReleaseTag, path: str) -> Classification:
        for suffix in (rule.suffix for rule in self.spec.sidecars if rule.applies_to(tag)):
            if path.endswith(suffix):
                owner = self.classify(tag, path[: -len(suffix)])
                if owner.kind in (FileKind.REQUIRED, FileKind.ALLOWED):
                    return Classification(FileKind.SIDECAR, owner.role)
        for role in self.roles_for(tag):
            spec = self.spec.roles[role]
            for rule in spec.allowed:
                pattern = _join(spec.folder, expand(rule.name, tag))
                if rule.applies_to(tag) and _pattern_re(pattern).fullmatch(path):
                    return Classification(FileKind.ALLOWED, role)
        return Classification(FileKind.UNEXPECTED)


def load_profile(name_or_path: str, base: Path | None = None) -> Profile:
    """Load a built-in profile by name (``cpython``) or a TOML file by path.

    Raises :class:`ConfigError` naming the profile and the offending key.
    """
    builtin = resources.files("bot.domain").joinpath("profiles", f"{name_or_path}.toml")
    if builtin.is_file():
        return _builtin_profile(name_or_path)
    path = Path(name_or_path)
    if base is not None and not path.is_absolute():
        path = base / path
    if not path.is_file():
        raise ConfigError(
            f"profile: {name_or_path!r} is neither a built-in profile nor a file "
            f"(built-in: {', '.join(builtin_profiles())})."
        )
    return _parse(path.read_text(encoding="utf-8"), str(path))


def builtin_profiles() -> list[str]:
    folder = resources.files("bot.domain").joinpath("profiles")
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


@cache
def _builtin_profile(name: str) -> Profile:
    text = resources.files("bot.domain").joinpath("profiles", f"{name}.toml").read_text("utf-8")
    return _parse(text, name)


def _parse(text: str, origin: str) -> Profile:
    try:
        return Profile(ProfileSpec.model_validate(tomllib.loads(text)))
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"profile {origin}: not valid TOML ({err}).") from err
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"profile {origin}: {key}: {first['msg']}.") from err


def expand(template: str, tag: ReleaseTag) -> str:
    """Fill a profile template: ``{tag}`` (3.14.0rc2), ``{version}`` (3.14.0), ``{branch}``
    (3.14), ``{pre}`` (rc2, empty for a final) and ``{tag_nodots}`` (3140rc2)."""
    return (
        template.replace("{tag}", str(tag))
        .replace("{pre}", tag.prerelease_suffix)
        .replace("{version}", tag.version)
        .replace("{branch}", tag.branch)
        .replace("{tag_nodots}", str(tag).replace(".", ""))
    )


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


@cache
def _pattern_re(pattern: str) -> re.Pattern[str]:
    """``**`` matches across folders, ``*`` within one name; the rest is literal."""
    parts = (re.escape(piece) for piece in pattern.split("**"))
    return re.compile(".+".join(part.replace(r"\*", "[^/]+") for part in parts))


def _newer_than(tag: ReleaseTag, branch: str) -> bool:
    major, minor = (int(part) for part in branch.split("."))
    return (tag.major, tag.minor) > (major, minor)
