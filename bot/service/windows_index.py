"""Publishing the Windows install-manager index: checking the staged one against the live one
before ``/publish`` offers a plan, and replacing the live one after everything else is public.

The rules are in :mod:`bot.domain.windows_index`; this module reads what they need through
the Storage port and performs the replacement as a compare-and-swap: the plan records the live
files' SHA-256 when ``/publish`` made it, and at swap time a live file that is neither that nor
the planned bytes (another publish changed it) stops the publish with nothing replaced. The
files that replace the live ones are the bot's copies, made with the rest at the
confirmation. An index shared with releases not yet public waits for the last of them: the
swap checks, at that moment, that each one's manifest is public (its promotion puts it there
last), so of several shared publishes running at once, the last to get there makes it live,
once. Blocking: the gate runs these functions in worker threads.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bot.domain.files import Listing
from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import (
    ABSENT,
    INDEX_STEP,
    INDEX_WAITS,
    MAX_INDEX,
    IndexRules,
    IndexVerdict,
    InvalidIndex,
    Sibling,
    judge_index,
    parse_installs,
)
from bot.errors import PublishStopped, StagingUnreachable, StorageError
from bot.ports import Storage

_SWAPPING = threading.Lock()  # one swap decided and done at a time (publishes run at once)


class IndexRaceLost(PublishStopped):
    """The live index changed between the plan and the swap: it is left alone, and the
    publish waits for the RM (a re-staged index, or finishing without it)."""


def pipeline_for(plan: PublishPlan, pipeline: tuple[str, ...]) -> tuple[str, ...]:
    """The pipeline's steps for ``plan``: with files that replace live ones, the index step
    comes right after promotion (everything else of the release is public by then) and
    before the release is registered and announced."""
    if not plan.replacements:
        return pipeline
    at = pipeline.index("promote") + 1
    return (*pipeline[:at], INDEX_STEP, *pipeline[at:])


def sha256(data: bytes | None) -> str:
    """The SHA-256 of a file's bytes, or "absent" for a file that does not exist."""
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class IndexCheck:
    """The verdict on the staged index, and the live files' SHA-256 (or "absent") that a
    plan made now would replace."""

    verdict: IndexVerdict
    live: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Neighbour:
    """Another release of the index's role, as the bot knows it: its staging as last listed
    (an open release; None: not listed yet), its confirmed plan (a publish under way), or
    ``waiting`` (a published release whose index step left the index to a shared one)."""

    tag: ReleaseTag
    listing: Listing | None = None
    plan: PublishPlan | None = None
    waiting: bool = False

    def stamp(self, rules: IndexRules) -> object:
        """What the verdict depends on, as cheap to compare as a listing's stamps."""
        if self.plan is not None:
            return (str(self.tag), self.plan.digest)
        if self.waiting:
            return (str(self.tag), self.waiting)
        if self.listing is None:  # open and not listed by the caller: listed at each check
            return object()  # never equal: no verdict is reused
        names = (*rules.names, rules.manifest_name(self.tag))
        return (
            str(self.tag),
            *(self.listing[n].stamp if n in self.listing else None for n in names),
        )


class IndexInspector:
    """Reads the staged index, the live one and the release's manifest for the verdict.

    Between two ``fresh`` checks a verdict is reused while the staged files keep their size
    and mtime (a scan then reads nothing); ``/publish`` and its confirmation always read afresh.
    """

    def __init__(self, storage: Storage, profile: Profile, rules: IndexRules) -> None:
        self.storage = storage
        self.profile = profile
        self.rules = rules
        self._cache: dict[str, tuple[object, IndexCheck]] = {}

    @classmethod
    def for_profile(cls, storage: Storage, profile: Profile) -> IndexInspector | None:
        """An inspector when the profile has an install index, else None."""
        rules = IndexRules.from_profile(profile)
        return None if rules is None else cls(storage, profile, rules)

    def takes_part(self, tag: ReleaseTag) -> bool:
        """Whether the index's role takes part in ``tag`` (not in a security release)."""
        return self.rules.role in self.profile.roles_for(tag)

    def check(
        self,
        tag: ReleaseTag,
        listing: Listing,
        *,
        fresh: bool = False,
        neighbours: Sequence[Neighbour] = (),
    ) -> IndexCheck | None:
        """Judge ``tag``'s staged index, with the other releases of its role that the bot
        knows (``neighbours``); None when the index's role takes no part in ``tag`` (a
        security release). Raises StorageError when a file cannot be read."""
        if not self.takes_part(tag):
            return None
        rules, manifest_name = self.rules, self.rules.manifest_name(tag)
        if rules.file not in listing and rules.catalog not in listing:
            return IndexCheck(IndexVerdict(False))
        names = (rules.file, rules.catalog, manifest_name)
        stamp = (
            tuple(listing[n].stamp if n in listing else None for n in names),
            tuple(n.stamp(rules) for n in neighbours),
        )
        cached = self._cache.get(str(tag))
        if not fresh and cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            check = self._read_and_judge(tag, listing, neighbours)
        except StagingUnreachable:
            raise
        except StorageError as err:  # not a regular file, too large: a reason, not an outage
            reason = str(err).rstrip(".")
            check = IndexCheck(IndexVerdict(True, (f"{rules.file} cannot be checked: {reason}",)))
        self._cache[str(tag)] = (stamp, check)
        return check

    def _read_and_judge(
        self, tag: ReleaseTag, listing: Listing, neighbours: Sequence[Neighbour]
    ) -> IndexCheck:
        rules, manifest_name = self.rules, self.rules.manifest_name(tag)
        index = self._staged(tag, listing, rules.file)
        live = self.storage.read_public(rules.file, MAX_INDEX)
        manifest = self._staged(tag, listing, manifest_name)
        if manifest is None:  # late files: the manifest may be public already
            manifest = self._public_manifest(tag)
        siblings: list[Sibling] = []
        if index is not None and neighbours:
            ours = (sha256(index), sha256(self._staged(tag, listing, rules.catalog)))
            siblings = [self._sibling(n, ours) for n in neighbours]
        verdict = judge_index(
            rules,
            tag,
            index=index,
            catalog_staged=rules.catalog in listing,
            live=live,
            manifest=manifest,
            siblings=siblings,
        )
        catalog = self.storage.read_public(rules.catalog, MAX_INDEX)
        return IndexCheck(verdict, {rules.file: sha256(live), rules.catalog: sha256(catalog)})

    def forget(self) -> None:
        """Drop every cached verdict (after a publish, the live index may have changed)."""
        self._cache.clear()

    def _public_manifest(self, tag: ReleaseTag) -> bytes | None:
        public = self.profile.public_target(tag, self.rules.role, self.rules.manifest_name(tag))
        return self.storage.read_public(public, MAX_INDEX)

    def _sibling(self, neighbour: Neighbour, ours: tuple[str, str]) -> Sibling:
        """What the index's rules need of ``neighbour``: its installs, from its manifest
        (staged, or public once published; none while a publish under way has not made it
        public yet), and whether it holds these very index and catalog bytes."""
        tag, rules, same = neighbour.tag, self.rules, False
        if neighbour.plan is None and not neighbour.waiting:  # open: its staging, now
            listing = neighbour.listing
            if listing is None:  # not listed since the start (relbot wait): list it
                listing = self.storage.list_staging(tag) or {}
            manifest = self._staged(tag, listing, rules.manifest_name(tag))
            theirs = tuple(sha256(self._staged(tag, listing, n)) for n in rules.names)
            same, published = theirs == ours, False
        else:  # publishing or published: its manifest is public once its files are
            manifest = self._public_manifest(tag)
            published = manifest is not None
            if neighbour.plan is not None:
                planned = {f.path: f.sha256 for f in neighbour.plan.replacements}
                same = tuple(planned.get(n, ABSENT) for n in rules.names) == ours
        try:
            installs = parse_installs(manifest, str(tag)) if manifest is not None else ()
        except InvalidIndex:  # its own verdict says so; here it lists nothing
            installs = ()
        waiting = neighbour.waiting and published
        return Sibling(str(tag), installs, published, same and not published, waiting)

    def _staged(self, tag: ReleaseTag, listing: Listing, name: str) -> bytes | None:
        if name not in listing or not listing[name].regular:
            return None
        return self.storage.read(tag, name, MAX_INDEX)


def swap(storage: Storage, plan: PublishPlan, profile: Profile) -> str:
    """Replace each live file of ``plan.replacements`` (the index, then its catalog) by one
    atomic rename, if it is still what the plan recorded; returns what was done. An index
    shared with releases whose files are not all public yet is left for the last of them
    (returns "waits for TAG, …").

    Idempotent: a live file that already has the planned bytes is done (a resume after a
    crash between the two renames finishes the second). Raises :class:`IndexRaceLost` before
    replacing anything when a live file changed since the plan, and ``PublishStopped`` when
    the bot's copy is not the confirmed one.
    """
    with _SWAPPING:
        pending = _not_public(storage, profile, plan.index_shared_with)
        if pending:
            files = " and ".join(f.target for f in plan.replacements)
            return (
                f"{INDEX_WAITS} {', '.join(pending)}: {files} go live with the last of them, "
                "which they also list"
            )
        return _swap(storage, plan)


def _not_public(storage: Storage, profile: Profile, tags: Sequence[str]) -> list[str]:
    """Those of ``tags`` whose install manifest is not public yet (promotion makes it
    public last of a release's Windows files)."""
    rules = IndexRules.from_profile(profile)
    if rules is None:
        return []
    pending = []
    for text in tags:
        tag = ReleaseTag.parse(text)
        manifest = profile.public_target(tag, rules.role, rules.manifest_name(tag))
        if storage.read_public(manifest, MAX_INDEX) is None:
            pending.append(text)
    return pending


def _swap(storage: Storage, plan: PublishPlan) -> str:
    files = plan.replacements
    paths = tuple(f.path for f in files)
    live = {f.target: sha256(storage.read_public(f.target, MAX_INDEX)) for f in files}
    for f in files:
        if live[f.target] not in (f.replaces, f.sha256):
            raise IndexRaceLost(
                f"the live {f.target} changed since /publish {plan.tag} (another publish?), "
                f"so it was left alone and nothing more of {plan.tag} is published (not "
                "registered, not announced).",
                paths,
            )
    todo = [f for f in files if live[f.target] != f.sha256]
    for f in todo:
        held = storage.read_aside(plan.tag, f.path, MAX_INDEX)
        if sha256(held) != f.sha256:
            raise PublishStopped(
                f"the bot's copy of {f.path} is not the confirmed one "
                f"({'missing' if held is None else 'different bytes'}); nothing was replaced.",
                paths,
            )
    for f in todo:
        storage.replace_public(plan.tag, f.path, f.target)
    if not todo:
        return "index already live"
    return ", ".join(f.target for f in todo) + " replaced"
