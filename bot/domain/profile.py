"""Profiles: which roles produce which files for a release. Profiles are data (TOML).

Over 400 lines because a profile's schema, its parsing and the questions every rule asks
of it (expected files, roles, signers, statuses) are one concept."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.domain.tags import ReleaseTag
from bot.domain.text import not_utf8
from bot.errors import ConfigError

_BOUND_RE = re.compile(r"\d+\.\d+(\.\d+)?")  # a branch (3.14) or a version (3.12.2)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def checked_bound(value: str | None) -> str | None:
    """``value`` when it is a branch (3.14) or a version (3.12.2), or None; else ValueError
    (the rule for ``since``, ``until`` and ``signatures_since``)."""
    if value is not None and not _BOUND_RE.fullmatch(value):
        raise ValueError(f"{value!r} is not a branch like 3.14 or a version like 3.12.2")
    return value


class FileRule(_Strict):
    """One file name (or pattern) with the releases it applies to.

    ``since``/``until`` are the first/last branch (``3.14``) or version (``3.12.2``);
    ``unless_status`` lists branch statuses (``security``) in which the file is not made;
    ``match`` (a pattern) lets a required file arrive under another name than ``name``
    (``-macos12.pkg`` for ``-macos11.pkg``); ``signed = false`` exempts it from signatures.
    """

    name: str
    since: str | None = None
    until: str | None = None
    unless_status: tuple[str, ...] = ()
    match: str | None = None
    signed: bool | None = None  # None: as the role says

    @field_validator("since", "until")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        return checked_bound(value)

    def applies_to(self, tag: ReleaseTag, status: str | None = None) -> bool:
        """Whether the rule holds for ``tag`` on a branch in ``status`` (None: unknown)."""
        if status is not None and status in self.unless_status:
            return False
        if self.since is not None and not _at_least(tag, self.since):
            return False
        return not (self.until is not None and _newer_than(tag, self.until))


GIB = 1 << 30


class SidecarRule(_Strict):
    suffix: str
    since: str | None = None
    until: str | None = None
    max_size: int | None = Field(default=None, gt=0)  # bytes; None: the profile's max_size

    def applies_to(self, tag: ReleaseTag) -> bool:
        return FileRule(name="", since=self.since, until=self.until).applies_to(tag)


class RoleSpec(_Strict):
    description: str = ""
    folder: str = ""  # sub-folder of the release's staging folder
    public: str = "{version}"  # folder under the public root
    stages: tuple[Literal["a", "b", "rc", "final"], ...] = ("a", "b", "rc", "final")
    unless_status: tuple[str, ...] = ()  # branch statuses in which the role delivers nothing
    signed: bool = True  # whether its files need a signature (when signatures are required)
    required: list[FileRule]
    allowed: list[FileRule] = Field(default_factory=list)


class ProfileSpec(_Strict):
    name: str
    description: str = ""
    indexes: list[str] = Field(default_factory=list)
    sidecars: list[SidecarRule] = Field(default_factory=list)
    roles: dict[str, RoleSpec]
    signers: dict[str, tuple[str, str]] = Field(default_factory=dict)
    # Sigstore signatures are required from this branch (or version) on, unless the config
    # opts out ([signatures] require = false); None: the config alone decides.
    signatures_since: str | None = None
    # Free-form tables read by the code that needs them (bot/domain/records.py reads [pydotorg]).
    pydotorg: dict[str, Any] = Field(default_factory=dict)
    links: dict[str, str] = Field(default_factory=dict)  # label → URL template, announced
    # The Windows install-manager index (bot/domain/windows_index.py reads it): file, role,
    # manifest. Published last, at the public root, by replacing the live copy.
    install_index: dict[str, str] = Field(default_factory=dict)
    # The largest a staged file may be, in bytes (a sidecar's own ``max_size`` overrides it):
    # a larger one cannot be the artifact, and hashing it would take minutes.
    max_size: int = Field(default=4 * GIB, gt=0)

    @field_validator("signatures_since")
    @classmethod
    def _since(cls, value: str | None) -> str | None:
        return checked_bound(value)


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
    pattern: str | None = None  # another name that may stand for ``path`` (a glob)
    signed: bool = True  # whether it needs a signature when signatures are required


class Profile:
    """A loaded profile. Answers, for a tag, which files each role must or may stage."""

    def __init__(
        self,
        spec: ProfileSpec,
        statuses: Mapping[str, str] | None = None,
        pinned: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.statuses: Mapping[str, str] = dict(statuses or {})  # branch → status
        # Per tag, what every path of its listing is judged against: worked out once, not
        # once per path (a staging folder may hold tens of thousands of entries).
        self._rules: dict[tuple[ReleaseTag, str | None], _TagRules] = {}
        # tag → the branch status it was published under (a live view: the journal's)
        self.pinned: Mapping[str, str] = pinned if pinned is not None else {}

    def with_statuses(self, statuses: Mapping[str, str]) -> Profile:
        """This profile, knowing each branch's status (``3.12`` → ``security``)."""
        return Profile(self.spec, statuses, self.pinned)

    def with_pinned(self, pinned: Mapping[str, str]) -> Profile:
        """This profile, where a release in ``pinned`` (tag → status) keeps that status
        whatever the release cycle says now (a published release's late files)."""
        return Profile(self.spec, self.statuses, pinned)

    def status(self, tag: ReleaseTag) -> str | None:
        """The status of ``tag``'s branch: the one ``tag`` was published under, else the
        release cycle's; None when neither knows it."""
        return self.pinned.get(str(tag)) or self.statuses.get(tag.branch)

    @property
    def roles(self) -> tuple[str, ...]:
        """Every role the profile knows, in display order."""
        return tuple(self.spec.roles)

    def roles_for(self, tag: ReleaseTag) -> tuple[str, ...]:
        """The roles that take part in ``tag`` (docs only for rc and final, say)."""
        stage = tag.stage.value or "final"
        status = self.status(tag)
        return tuple(
            name
            for name, role in self.spec.roles.items()
            if stage in role.stages and status not in role.unless_status
        )

    def expected(self, tag: ReleaseTag, present: Collection[str] = ()) -> tuple[ExpectedFile, ...]:
        """The required files of ``tag``, role by role in profile order.

        A required file that may arrive under another name (its rule's ``match``) is given
        by the first of ``present`` (staged paths) that matches, when its own name is absent.
        """
        found = []
        for file in self._tag_rules(tag).expected:
            if file.pattern is not None and file.path not in present:
                pattern = _pattern_re(file.pattern)
                path = next((p for p in sorted(present) if pattern.fullmatch(p)), file.path)
                file = ExpectedFile(file.role, path, file.pattern, file.signed)
            found.append(file)
        return tuple(found)

    def _expected_as_named(self, tag: ReleaseTag) -> tuple[ExpectedFile, ...]:
        found = []
        status = self.status(tag)
        for role in self.roles_for(tag):
            spec = self.spec.roles[role]
            for rule in spec.required:
                if not rule.applies_to(tag, status):
                    continue
                path = _join(spec.folder, expand(rule.name, tag))
                pattern = _join(spec.folder, expand(rule.match, tag)) if rule.match else None
                signed = spec.signed if rule.signed is None else rule.signed
                found.append(ExpectedFile(role, path, pattern, signed))
        return tuple(found)

    def _tag_rules(self, tag: ReleaseTag) -> _TagRules:
        # Keyed by the status too: a release's status is pinned once it is published.
        key = (tag, self.status(tag))
        rules = self._rules.get(key)
        if rules is None:
            if len(self._rules) >= _TAGS_REMEMBERED:
                self._rules.clear()
            expected = self._expected_as_named(tag)
            status = self.status(tag)
            allowed = [
                (_pattern_re(_join(spec.folder, expand(rule.name, tag))), role)
                for role in self.roles_for(tag)
                for spec in (self.spec.roles[role],)
                for rule in spec.allowed
                if rule.applies_to(tag, status)
            ]
            # One alternation, tried in order as the rules are: the first rule that matches
            # the whole path names its role (group ``r3`` is the fourth rule).
            either = "|".join(
                f"(?P<r{i}>{pattern.pattern})" for i, (pattern, _) in enumerate(allowed)
            )
            rules = _TagRules(
                expected,
                tuple((_pattern_re(f.pattern), f.role) for f in expected if f.pattern),
                {f.path: Classification(FileKind.REQUIRED, f.role) for f in expected},
                tuple(rule.suffix for rule in self.spec.sidecars if rule.applies_to(tag)),
                re.compile(either) if allowed else None,
                tuple(role for _, role in allowed),
            )
            self._rules[key] = rules
        return rules

    def size_limit(self, path: str) -> int:
        """The largest ``path`` may be, in bytes: its sidecar's ``max_size`` (``.sigstore``,
        by the end of its name), else the profile's ``max_size``."""
        for rule in self.spec.sidecars:
            if rule.max_size is not None and path.endswith(rule.suffix):
                return rule.max_size
        return self.spec.max_size

    def needs_signature(self, tag: ReleaseTag, path: str) -> bool:
        """Whether required file ``path`` of ``tag`` must be signed (when signatures are
        required): what the release database lists is signed, docs and the like are not."""
        return next((f.signed for f in self.expected(tag, (path,)) if f.path == path), False)

    def classify(self, tag: ReleaseTag, path: str) -> Classification:
        """Say whether ``path`` is required, allowed or a sidecar of ``tag``, and whose."""
        return self.classifier(tag)(path)

    def classifier(self, tag: ReleaseTag) -> Callable[[str], Classification]:
        """:meth:`classify` for ``tag``, for many paths (the tag's rules looked up once)."""
        rules = self._tag_rules(tag)

        def classify(path: str) -> Classification:
            return rules.required.get(path) or self._classify_slow(rules, classify, path)

        return classify

    def public_folder(self, tag: ReleaseTag, role: str | None = None) -> str:
        """The folder under the public root that ``role``'s files go to (default: artifacts)."""
        spec = self.spec.roles.get(role) if role else None
        return expand(spec.public if spec else "{version}", tag)

    def public_target(self, tag: ReleaseTag, role: str, path: str) -> str:
        """Where a staged ``path`` of ``role`` goes under the public root."""
        folder = self.spec.roles[role].folder
        inner = path[len(folder) + 1 :] if folder else path
        return f"{self.public_folder(tag, role)}/{inner}"

    def is_index(self, path: str) -> bool:
        """Whether ``path`` is an index file, to be published after everything it names."""
        name = path.rpartition("/")[2]
        return any(_pattern_re(pattern).fullmatch(name) for pattern in self.spec.indexes)

    def links(self, tag: ReleaseTag) -> dict[str, str]:
        """Where people find a published release (the announcement carries these)."""
        return {label: expand(url, tag) for label, url in self.spec.links.items()}

    def requires_signatures(self, tag: ReleaseTag) -> bool:
        """Whether the profile wants ``tag``'s signed files signed (``signatures_since``)."""
        since = self.spec.signatures_since
        return since is not None and _at_least(tag, since)

    def signer(self, tag: ReleaseTag) -> tuple[str, str] | None:
        """The (identity, issuer) expected to sign ``tag``, if the profile names one."""
        return self.spec.signers.get(tag.branch)

    @staticmethod
    def _classify_slow(
        rules: _TagRules, classify: Callable[[str], Classification], path: str
    ) -> Classification:
        for pattern, role in rules.matched:
            if pattern.fullmatch(path):
                return Classification(FileKind.REQUIRED, role)
        for suffix in rules.sidecars:
            if path.endswith(suffix):
                owner = classify(path[: -len(suffix)])
                if owner.kind in (FileKind.REQUIRED, FileKind.ALLOWED):
                    return Classification(FileKind.SIDECAR, owner.role)
        if rules.allowed is not None and (found := rules.allowed.fullmatch(path)):
            group = found.lastgroup
            assert group is not None  # every group of the alternation is a rule's
            return Classification(FileKind.ALLOWED, rules.allowed_roles[int(group[1:])])
        return Classification(FileKind.UNEXPECTED)


_TAGS_REMEMBERED = 64  # tags whose rules a profile keeps worked out


@dataclass(frozen=True)
class _TagRules:
    """A profile's rules worked out for one tag."""

    expected: tuple[ExpectedFile, ...]  # as named (a ``match`` not applied)
    matched: tuple[tuple[re.Pattern[str], str], ...]  # (``match`` pattern, role)
    required: Mapping[str, Classification]
    sidecars: tuple[str, ...]  # the suffixes of the sidecars that apply
    allowed: re.Pattern[str] | None  # every allowed rule's pattern, one group each
    allowed_roles: tuple[str, ...]  # the role of each group, in order


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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"profile {path}: cannot read it ({err.strerror}).") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"profile {path}: {not_utf8(err)}") from err
    return _parse(text, str(path))


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
    except RecursionError as err:
        raise ConfigError(f"profile {origin}: its values are nested too deeply.") from err
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
    """``**`` matches across folders, ``*`` within one name, ``[1-9]`` one character of a
    set; the rest is literal."""
    out = []
    for token in re.split(r"(\*\*|\*|\[[^\]/]+\])", pattern):
        if token == "**":
            out.append(".+")
        elif token == "*":
            out.append("[^/]+")
        elif token.startswith("[") and token.endswith("]") and len(token) > 2:
            out.append("[" + re.escape(token[1:-1]).replace(r"\-", "-") + "]")
        else:
            out.append(re.escape(token))
    return re.compile("".join(out))


def _bound(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _at_least(tag: ReleaseTag, bound: str) -> bool:
    """Whether ``tag`` is on branch/version ``bound`` (3.14, 3.12.2) or newer."""
    wanted = _bound(bound)
    return (tag.major, tag.minor, tag.micro)[: len(wanted)] >= wanted


def _newer_than(tag: ReleaseTag, bound: str) -> bool:
    wanted = _bound(bound)
    return (tag.major, tag.minor, tag.micro)[: len(wanted)] > wanted
