"""The Windows install-manager index: the one file ``py install`` reads to learn what exists.

The windows role may stage the index (``index-windows.json``) and its Authenticode catalog
(``index-windows.json.cat``, which covers the index's bytes and can only be made on Windows) in
the release's staging folder. They are published last, at the public root, each by one atomic
replace of the live copy. Before that, the staged index must be a valid index that keeps every
install of the live one and holds every install of this release (those of its manifest,
``windows-TAG.json``): the bot publishes the staged bytes as they are and never re-merges them.

On a day of several bugfix releases, one index may be built for all of them: it then also
lists the installs of other releases not yet published (its "siblings"). Such an index must be
staged, with the same catalog, for each of them; it goes live with the last of them to
publish (never before their files are public), so that it is built once. An index must also
hold the installs of a published sibling that still wait for a shared index to go live.

Which files these are comes from the profile's ``[install_index]`` table; a profile without it
has no install index. Pure: bytes in, verdicts out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.domain.profile import Profile, expand
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RelbotError

MAX_INDEX = 64 << 20  # bytes read of an index or a manifest; the live index is well under 1 MB
INDEX_STEP = (
    "index"  # the publish's step that replaces the live index (bot/service/windows_index.py)
)
INDEX_WAITS = "waits for"  # how that step's detail begins when a shared index waits
ABSENT = "absent"  # what a plan records for a live file that does not exist yet
_SHOWN = 3  # installs named in one blocker before "and N more"


class InvalidIndex(RelbotError):
    """An index or manifest that is not ``{"versions": [...]}`` of installs with ``id`` and
    ``sort-version``; the message says what is wrong."""


@dataclass(frozen=True)
class IndexRules:
    """The profile's ``[install_index]``: the index's name (its catalog is NAME.cat), the
    role that stages both, and the manifest template listing a release's installs."""

    file: str
    role: str
    manifest: str

    @property
    def catalog(self) -> str:
        return self.file + ".cat"

    @property
    def names(self) -> tuple[str, str]:
        """The index and its catalog, in publishing order."""
        return (self.file, self.catalog)

    def manifest_name(self, tag: ReleaseTag) -> str:
        return expand(self.manifest, tag)

    @classmethod
    def from_profile(cls, profile: Profile) -> IndexRules | None:
        """The profile's rules, or None when it has no ``[install_index]``.

        Raises :class:`ConfigError` naming the key that is missing or wrong.
        """
        table = profile.spec.install_index
        if not table:
            return None
        unknown = sorted(set(table) - {"file", "role", "manifest"})
        if unknown:
            raise ConfigError(f"profile {profile.name}: install_index.{unknown[0]} is not a key.")
        for key in ("file", "role", "manifest"):
            if not isinstance(table.get(key), str) or not table[key]:
                raise ConfigError(f"profile {profile.name}: install_index.{key} must be a name.")
        if "/" in table["file"]:
            raise ConfigError(
                f"profile {profile.name}: install_index.file must be a file name, not a path."
            )
        if table["role"] not in profile.roles:
            raise ConfigError(
                f"profile {profile.name}: install_index.role {table['role']!r} is not a role."
            )
        return cls(table["file"], table["role"], table["manifest"])


@dataclass(frozen=True)
class Install:
    """One entry of an index: what ``py install`` can install, and at which version."""

    id: str
    sort_version: str

    @property
    def key(self) -> tuple[str, str]:
        """Entries are the same install when id and sort-version match, ignoring case (as
        the Windows pipeline's merge compares them)."""
        return (self.id.casefold(), self.sort_version.casefold())

    def __str__(self) -> str:
        return f"{self.id} {self.sort_version}"


def parse_installs(data: bytes, name: str) -> tuple[Install, ...]:
    """The installs of an index or manifest, in file order.

    Raises :class:`InvalidIndex` saying what is wrong with ``name``.
    """
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InvalidIndex(f"{name} is not JSON ({err})") from None
    versions = document.get("versions") if isinstance(document, dict) else None
    if not isinstance(versions, list):
        raise InvalidIndex(f'{name} is not {{"versions": [...]}}')
    installs = []
    for number, entry in enumerate(versions, 1):
        if not isinstance(entry, dict):
            raise InvalidIndex(f"{name}: install {number} is not an object")
        fields = [entry.get("id"), entry.get("sort-version")]
        if not all(isinstance(value, str) and value for value in fields):
            raise InvalidIndex(f'{name}: install {number} lacks "id" or "sort-version"')
        installs.append(Install(str(fields[0]), str(fields[1])))
    return tuple(installs)


@dataclass(frozen=True)
class IndexVerdict:
    """What the staged index means for ``/publish``: whether it is staged, what it holds,
    and the blockers (each a phrase naming the file and, where it applies, the installs)."""

    staged: bool
    blockers: tuple[str, ...] = ()
    installs: int = 0  # in the staged index
    live_kept: int = 0  # installs of the live index that the staged one keeps
    versions: tuple[str, ...] = ()  # sort-versions of this release's installs
    shared_with: tuple[str, ...] = ()  # unpublished siblings it also lists (same index staged)

    def describe(self) -> str:
        """One line for the readiness summary."""
        if not self.staged and not self.blockers:
            return "not staged: the live index is left alone"
        if self.blockers:
            return "staged, blocks publishing: " + self.blockers[0]
        holds = ", ".join(self.versions) or "no install of this release"
        line = f"staged, holds {holds}, keeps {self.live_kept} live installs"
        if self.shared_with:
            line += f"; shared with {shared_words(self.shared_with)}"
        return line


def shared_words(tags: Sequence[str]) -> str:
    """How a shared index is said: "3.12.12: it goes live with the last of them to publish"."""
    return ", ".join(tags) + ": it goes live with the last of them to publish"


@dataclass(frozen=True)
class Sibling:
    """Another release that the index's role takes part in, as far as the index cares: its
    installs (its manifest's; none when it cannot be read now, a publish under way), whether
    its files are public, whether its staging (or its
    confirmed plan) holds the same index and catalog as this release's, and, for a published
    one, whether its installs wait for a shared index that has not gone live yet."""

    tag: str
    installs: tuple[Install, ...]
    published: bool = False
    same_index: bool = False
    waiting: bool = False


def judge_index(
    rules: IndexRules,
    tag: ReleaseTag,
    *,
    index: bytes | None,
    catalog_staged: bool,
    live: bytes | None,
    manifest: bytes | None,
    siblings: Sequence[Sibling] = (),
) -> IndexVerdict:
    """Judge the staged ``index`` (None: not staged) against the ``live`` public index (None:
    there is none yet) and this release's ``manifest`` (None: neither staged nor public),
    and the other releases of its role that the bot knows (``siblings``).

    Both-or-neither: an index without its catalog, or a catalog without its index, blocks.
    """
    if index is None:
        if catalog_staged:
            return IndexVerdict(
                False,
                (
                    f"{rules.catalog} is staged without {rules.file}: stage both or "
                    "neither (without them the live index is left alone)",
                ),
            )
        return IndexVerdict(False)
    blockers: list[str] = []
    if not catalog_staged:
        blockers.append(
            f"{rules.file} is staged without its catalog {rules.catalog}: stage both or neither"
        )
    try:
        staged = parse_installs(index, rules.file)
    except InvalidIndex as err:
        return IndexVerdict(True, (*blockers, f"{err}: rebuild it"))
    held = {install.key for install in staged}
    live_installs: tuple[Install, ...] = ()
    if live is not None:
        try:
            live_installs = parse_installs(live, f"the live {rules.file}")
        except InvalidIndex as err:
            blockers.append(f"{err}, so the staged one cannot be checked against it")
    lost = _missing(live_installs, held)
    if lost:
        versions = ", ".join(_distinct(i.sort_version for i in lost))
        blockers.append(
            f"{rules.file} was built before {versions} was published: rebuild it (it lacks "
            f"{_some(lost)} of the live index)"
        )
    manifest_name = rules.manifest_name(tag)
    release: tuple[Install, ...] = ()
    if manifest is None:
        blockers.append(
            f"{rules.file} cannot be checked: {manifest_name} is neither staged nor public"
        )
    else:
        try:
            release = parse_installs(manifest, manifest_name)
        except InvalidIndex as err:
            blockers.append(str(err))
    absent = _missing(release, held)
    if absent:
        blockers.append(
            f"{rules.file} lacks {tag}'s installs: {_some(absent)}; rebuild it with {manifest_name}"
        )
    shared: list[str] = []
    if not blockers:  # only then are the installs it holds beyond live and its own known
        live_keys = {i.key for i in live_installs}
        extra = _missing(staged, live_keys | {i.key for i in release})
        shared, blockers = _judge_siblings(rules, extra, held | live_keys, siblings)
    return IndexVerdict(
        True,
        tuple(blockers),
        installs=len(staged),
        live_kept=len(live_installs) - len(lost),
        versions=tuple(_distinct(i.sort_version for i in release)),
        shared_with=tuple(shared),
    )


def _judge_siblings(
    rules: IndexRules,
    extra_installs: list[Install],
    kept: set[tuple[str, str]],
    siblings: Sequence[Sibling],
) -> tuple[list[str], list[str]]:
    """The unpublished siblings the staged index is shared with (it lists their installs;
    ``extra_installs`` are those it holds that are neither live nor this release's), and the
    blockers: installs of no sibling, a sibling whose installs it lists but whose staging
    holds another index, and a published sibling whose installs wait for an index and are
    neither in this one nor live (``kept``)."""
    extra = {i.key for i in extra_installs}
    shared: list[str] = []
    blockers: list[str] = []
    theirs = {i.key for sibling in siblings for i in sibling.installs}
    if unknown := [i for i in extra_installs if i.key not in theirs]:
        blockers.append(
            f"{rules.file} lists installs that are neither live, nor this release's, nor of "
            f"a release staged with the same index: {_some(unknown)}; rebuild it from the "
            "live index"
        )
    for sibling in siblings:
        if sibling.published:
            owed = [i for i in sibling.installs if sibling.waiting and i.key not in kept]
            if owed:
                blockers.append(
                    f"{rules.file} lacks {sibling.tag}'s installs ({_some(owed)}), which wait "
                    f"for this index: rebuild it with them, or stage the index {sibling.tag} "
                    "shared"
                )
            continue
        listed = [i for i in sibling.installs if i.key in extra]
        if sibling.same_index and (listed or not sibling.installs):  # installs unknown: its
            shared.append(sibling.tag)  # own check found them in these very bytes
        elif listed:
            blockers.append(
                f"{rules.file} also lists {sibling.tag}'s installs ({_some(listed)}), but "
                f"{sibling.tag}'s staging holds another index: stage the same {rules.file} and "
                f"{rules.catalog} for {sibling.tag} (it goes live with the last of them to "
                "publish), or rebuild it without them"
            )
    return shared, blockers


def index_target(rules: IndexRules | None, role: str, path: str) -> str | None:
    """The public target of a staged index file (its name, at the public root), or None
    when ``path`` of ``role`` is not one."""
    if rules is not None and role == rules.role and path in rules.names:
        return path
    return None


def _missing(wanted: Iterable[Install], held: set[tuple[str, str]]) -> list[Install]:
    return [install for install in wanted if install.key not in held]


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _some(installs: list[Install]) -> str:
    named = ", ".join(str(i) for i in installs[:_SHOWN])
    more = len(installs) - _SHOWN
    return named + (f" and {more} more" if more > 0 else "")
