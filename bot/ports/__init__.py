"""The ports: the small interfaces the service layer needs from the world (storage, the
journal, python.org, the CDN, the forum, the signature verifier, the chat channel) and the
messages it sends through them (:mod:`~bot.ports.messages`). The I/O packages and the
adapters implement them. The ports may import the basics and :mod:`bot.domain` only.

Over 400 lines because it is the one catalogue of what the core asks of the world: a short
Protocol or report per service, read together."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.domain.announcement import Announcement, Topic
from bot.domain.files import Listing
from bot.domain.history import Event, EventKind, ReleaseState
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.signing import SignatureResult, SignatureStatus
from bot.domain.tags import ReleaseTag
from bot.ports.lease import Holder, StorageLease
from bot.ports.messages import ChannelMessage


@dataclass(frozen=True)
class PromotionReport:
    """What a promotion did: ``renamed`` folders moved whole, ``moved`` single files,
    ``already`` files found public with the planned content (a resumed promotion), and the
    ``problems`` of the check that followed: public files that are not what the bot wrote
    (``X differs``, ``X is missing``...)."""

    renamed: tuple[str, ...] = ()
    moved: int = 0
    already: int = 0
    problems: tuple[str, ...] = ()


class Left(str):
    """A staged original the tidy left in staging (its path), with ``why``: ``changed``
    (not the file the bot copied any more), ``folder REL`` (its folder REL is not the one
    the bot copied from: replaced, or a link now), or ``error REASON`` (the server's
    words, as ``Permission denied``)."""

    why: str

    def __new__(cls, path: str, why: str = "changed") -> Left:
        left = super().__new__(cls, path)
        left.why = why
        return left


class Storage(Protocol):
    """Staging and public folders. Blocking calls: the gate runs them in worker threads.

    Errors are :class:`bot.errors.StorageError` (``StagingUnreachable`` when the backend
    cannot be reached at all, ``PromotionConflict`` when a public file would be overwritten).
    """

    def staged_tags(self) -> list[str]:
        """Names of the release folders in staging (one listing)."""
        ...

    def list_staging(self, tag: ReleaseTag) -> Listing | None:
        """Every entry below the release's staging folder, or None if there is no folder.

        One listing per folder; symlinks are reported (``regular=False``), never followed.
        """
        ...

    def list_all_staging(self, tags: Sequence[ReleaseTag]) -> Mapping[str, Listing | None]:
        """A scan's :meth:`list_staging` of each, by name, at once; one missing: list it."""

    def list_public(self, folders: Sequence[str]) -> Listing:
        """Every entry below the given public folders (``3.14.1``, ``doc/3.14.1``), keyed by
        path under the public root; a folder that does not exist adds nothing. One listing
        per folder; symlinks are reported, never followed."""
        ...

    def digest(
        self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        """SHA-256 (hex) of staged files, computed where the files are. A backend may reuse
        a digest while size and mtime are unchanged, except when ``fresh`` is asked."""
        ...

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        """Copy the plan's staged files into the bot's work folder (owned by the bot, mode
        0444, on public's filesystem), hashing each copy; returns what differs from the plan
        (``X changed``, ``X is missing``...; empty when exact: every copy is in place).
        Copies already made are kept; ``fresh`` (a new confirmation) drops leftovers of an
        earlier one first. The staged originals are left as they are."""
        ...

    def promote(
        self, plan: PublishPlan, *, public_before: Sequence[str] = (), recheck: bool = False
    ) -> PromotionReport:
        """Make the bot's copies of the plan public, all at once where possible; idempotent.
        Then check every public file against the bot's copy (by identity, by hash where
        identity cannot tell): the report's ``problems``. With ``recheck`` (copies made by an
        earlier process or before a stop) the copies, and the files an earlier attempt made
        public, are hashed again before anything moves.

        Raises ``PublishStopped`` when a copy is missing or changed or the work folder is not
        the bot's, ``PromotionConflict`` when a public file would be overwritten (``moved``
        says whether files were public by then), ``StorageError`` when a public folder is in
        the way or cannot be written (naming it, and the files public by then).
        ``public_before``: targets that were public before the confirmation.
        """
        ...

    def overlap_on_server(self) -> str | None:
        """Whether the server resolves staging and public to one folder (or one inside the
        other) through a link: the sentence saying so, else None (local folders are
        resolved when the config is read)."""
        ...

    def in_public(self, plan: PublishPlan) -> list[str]:
        """The plan's public targets that exist now."""
        ...

    def discard(self, tag: ReleaseTag) -> None:
        """Drop the bot's copies of ``tag`` (``/abort``); staging is not touched. Raises
        ``PublishStopped`` when the work folder is not the bot's (nothing is touched)."""
        ...

    def tidy(self, plan: PublishPlan) -> list[str]:
        """Once the plan is public: remove each staged original still identical to the file
        the bot copied (never through a link at any level of staging), and the bot's copies;
        returns the originals left in staging (:class:`Left`, sorted). ``StorageError`` when
        staging was left as it is (the server runs no commands, a record from before the
        folders' identities, an unreachable server)."""
        ...

    def read(self, tag: ReleaseTag, path: str, limit: int) -> bytes:
        """A small staged file (a signature bundle), whole; StorageError past ``limit`` bytes."""
        ...

    def write(self, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False) -> None:
        """Put a small file (a signature) in the release's staging folder, whole or not at
        all: written under a hidden temporary name, then renamed. Without ``replace`` an
        existing file is never overwritten: StorageError, unless it already holds exactly
        ``data`` (a repeated write is done)."""
        ...

    def write_frozen(self, plan: PublishPlan, made: Sequence[tuple[PlanFile, bytes]]) -> None:
        """Add files the bot made (the signatures of the confirmed files: each planned file
        with its bytes) to its own copies of ``plan``, as the freeze makes copies (the bot's,
        read-only, only when the bytes are the planned ones). StorageError when the work
        folder is not the bot's or a copy cannot be made."""
        ...

    # Files that replace live ones (the install index), published after promotion. Each
    # raises StorageError with a sentence; files are small and read whole.
    def read_public(self, path: str, limit: int) -> bytes | None:
        """A small file under the public root (``index-windows.json``), or None if absent."""
        ...

    def read_aside(self, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
        """The bot's copy of a file that replaces a live one (made by the freeze), whole, or
        None if it is not there."""
        ...

    def replace_public(self, tag: ReleaseTag, path: str, target: str) -> None:
        """Replace the public ``target`` with the bot's copy of ``path`` by ONE atomic
        rename."""
        ...

    def staging_location(self, tag: ReleaseTag) -> str:
        """Where people upload ``tag``'s files, for messages (``/srv/staging/3.14.1/``)."""
        ...

    def check(self) -> list[str]:
        """Problems that would stop the bot from working, each a sentence with the fix."""
        ...

    def lock(self, holder: Holder) -> StorageLease:
        """Take the storage lock for ``holder`` (this process) until released; raises
        :class:`bot.errors.StorageLocked` naming the other holder when one runs."""
        ...


class Chat(Protocol):
    """The release channel on one platform (or several, fanned out)."""

    async def post(self, message: ChannelMessage) -> str:
        """Post a new message; returns a reference usable with :meth:`update`.

        A message marked ``once`` is posted at most once: the channel's recent messages are
        looked at first, and when one carries the same mark its reference is returned and
        nothing is posted; else the post carries the mark. A channel that keeps no history
        (the console) shows the message before this returns, never later."""
        ...

    async def update(self, ref: str, message: ChannelMessage) -> None:
        """Replace a message posted earlier (the readiness summary is edited in place)."""
        ...


class SignatureVerifier(Protocol):
    """Checks a Sigstore bundle against a SHA-256 computed by storage (files are never read
    whole). Blocking; the gate runs it in a worker thread."""

    def verify(
        self, tag: ReleaseTag, path: str, sha256: str, bundle: bytes | None
    ) -> SignatureResult:
        """``bundle`` is None when ``path + ".sigstore"`` is not staged."""
        ...


@dataclass(frozen=True)
class RegistryReport:
    created: int = 0
    replaced: int = 0
    deleted: int = 0
    unchanged: int = 0


class Registry(Protocol):
    """The release database (python.org's "addfiles"). Blocking; run in worker threads.

    Errors are :class:`bot.errors.RegistryError` with a sentence fit for the channel.
    """

    def preflight(self, tag: ReleaseTag) -> None:
        """Raise unless the release record exists and the credentials may write to it."""
        ...

    def sync(
        self, plan: PublishPlan, *, notice: Callable[[str], None] | None = None
    ) -> RegistryReport:
        """Make the release's file records match the published plan, by difference;
        running it again is a no-op. ``notice`` is told, once per sync, a wait the
        database's rate limit asks for (called from the worker thread)."""
        ...

    def check(self) -> list[str]:
        """For ``relbot check``: problems reaching the database with these credentials."""


class PurgeOutcome(Protocol):
    @property
    def purged(self) -> Sequence[str]: ...

    @property
    def failed(self) -> Sequence[object]: ...

    @property  # URLs not sent: another publish's purge sent them after this one was asked
    def already(self) -> Sequence[str]: ...


class Purger(Protocol):
    """Purges a CDN's copies of a release's pages. Blocking; failures are reported in the
    outcome, never raised (a publish is never undone for a stale cache)."""

    def ask(self) -> int:
        """A mark of now; see ``since``."""

    def purge(
        self, tag: ReleaseTag, replaced: Sequence[str] = (), *, since: int | None = None
    ) -> PurgeOutcome:
        """Purge ``tag``'s pages and the public paths a publish ``replaced`` (and folders),
        save URLs another purge sent after ``since`` (an :meth:`ask` of the caller)."""


@dataclass(frozen=True)
class DownloadsReport:
    """Every file of a plan fetched over its public URL matched: how many, of which
    ``.sigstore`` bundles, and the bytes read."""

    files: int = 0
    bundles: int = 0
    size: int = 0


class PublicDownloads(Protocol):
    """The public site that serves the published files. Blocking; run in worker threads."""

    base_url: str  # where the files are fetched from, as the plan says

    def verify(self, plan: PublishPlan) -> DownloadsReport:
        """Fetch every file of ``plan`` as a user would and compare status, size and SHA-256
        with the plan. Raises :class:`bot.errors.DownloadsError` naming each file that
        differs or could not be fetched."""
        ...

    def check(self) -> list[str]:
        """For ``relbot check``: problems reaching the public site."""
        ...


@dataclass(frozen=True)
class ReleasePageReport:
    """What making a release page public did: whether anything changed (False: it was
    already as wanted), whether the release is now python.org's latest, the releases
    python.org took ``is_latest`` from as expected, and any other change of ``is_latest``
    seen meanwhile (someone must look)."""

    changed: bool
    is_latest: bool
    demoted: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()


class ReleasePage(Protocol):
    """The release's page on python.org (its Release record's flags). Blocking.

    Errors are :class:`bot.errors.RegistryError` with a sentence fit for the channel."""

    def preflight(self, tag: ReleaseTag) -> None:
        """Raise unless the Release of ``tag`` is there for these credentials to change."""
        ...

    def publish(self, tag: ReleaseTag) -> ReleasePageReport:
        """Make the page public (``is_published``, ``pre_release`` from the tag, ``is_latest``
        for the newest final), then check what else changed; running it again is a no-op."""
        ...

    def check(self) -> list[str]:
        """For ``relbot check``: problems reaching the API with these credentials."""
        ...


class Forum(Protocol):
    """Where the announcement is posted (Discourse), as one user, in one category with its
    tags. Blocking. Errors are :class:`bot.errors.ForumError`."""

    url: str  # the forum's address, and the user who posts (as the plan says)
    username: str

    def preflight(self) -> None:
        """Raise unless the key works for its user and the category can be posted in."""
        ...

    def find_topic(self, title: str) -> Topic | None:
        """A topic this user started with ``title`` (compared as the forum does), if any."""
        ...

    def post(self, announcement: Announcement) -> Topic:
        """Start the topic, once: never retried here, since an answer lost on the way leaves
        it unknown whether the topic exists (:meth:`find_topic` tells, before any retry).
        Raises :class:`bot.errors.TitleTaken` when the forum has that title already."""
        ...

    def search_url(self, title: str) -> str:
        """A page where people find the topic with ``title`` (for a topic found taken)."""
        ...

    def check(self) -> list[str]:
        """For ``relbot check``: problems reaching the forum with this key."""
        ...


class Journal(Protocol):
    """The event log of every release (append-only), and what it folds to. The state of a
    release is derived from its events, never patched in place."""

    def append(self, tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Event:
        """Record one event (durable when this returns)."""
        ...

    def events(self, tag: ReleaseTag) -> list[Event]:
        """Every event of ``tag``, oldest first."""
        ...

    def last_id(self) -> int:
        """The id of the newest event of any release (0 for none)."""
        ...

    def release(self, tag: ReleaseTag) -> ReleaseState:
        """``tag``'s state, folded from its events."""
        ...

    def open_tags(self) -> list[ReleaseTag]:
        """The releases someone acted on and not yet published (or with late files
        confirmed since the last publish)."""
        ...

    def tags(self) -> list[ReleaseTag]:
        """Every release recorded."""
        ...

    def summary_ref(self, tag: ReleaseTag) -> str | None:
        """The chat reference of ``tag``'s summary message, if one was posted."""
        ...

    def set_summary_ref(self, tag: ReleaseTag, ref: str) -> None:
        """Remember where ``tag``'s summary message is, to edit it in place."""
        ...


__all__ = [
    "Chat",
    "DownloadsReport",
    "Forum",
    "Journal",
    "Left",
    "PromotionReport",
    "PublicDownloads",
    "PurgeOutcome",
    "Purger",
    "Registry",
    "RegistryReport",
    "ReleasePage",
    "ReleasePageReport",
    "SignatureResult",
    "SignatureStatus",
    "SignatureVerifier",
    "Storage",
]
