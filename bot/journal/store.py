"""The state store: an append-only event log in SQLite (WAL), and the one-owner lock.

Over 400 lines because it is the one SQLite schema with every query made on it."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bot.domain.history import Event, EventKind, ReleaseState, fold
from bot.domain.tags import ReleaseTag
from bot.domain.text import shown
from bot.errors import (
    StateFileError,
    StateGone,
    StateLocked,
    StateWriteError,
    StorageError,
    TagError,
)
from bot.regular_files import special_file_kind

log = logging.getLogger(__name__)

# Migration N takes a file from schema N-1 to N; ``PRAGMA user_version`` records where a
# file is. Never edit a released migration: add the next one.
MIGRATIONS: tuple[str, ...] = (
    # 1: the event log.
    """
    CREATE TABLE events (
        id    INTEGER PRIMARY KEY AUTOINCREMENT,
        at    REAL    NOT NULL,
        tag   TEXT    NOT NULL,
        actor TEXT    NOT NULL,
        kind  TEXT    NOT NULL,
        data  TEXT    NOT NULL
    );
    CREATE INDEX events_by_tag ON events (tag, id);
    """,
    # 2: where each release's summary message is, so a restarted bot edits it in place.
    """
    CREATE TABLE summaries (
        tag TEXT PRIMARY KEY,
        ref TEXT NOT NULL
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
_MADE_BY = ("events", "summaries")  # the table each migration made, in order
# The columns of each table as the migrations make them: anything else is not our file.
TABLES: dict[str, tuple[str, ...]] = {
    "events": ("id", "at", "tag", "actor", "kind", "data"),
    "summaries": ("tag", "ref"),
}
LAST_TIME = 253_402_300_799.0  # 9999-12-31T23:59:59Z: the last time every formatter shows

# What each kind of event must carry, and the types of what it may carry: the fold, the
# audit trail and the board read these, so an event that lacks one is refused when read.
_NUMBER = (int, float)
_REQUIRED: dict[EventKind, dict[str, type | tuple[type, ...]]] = {
    EventKind.CLAIMED: {"role": str, "snapshot": list},
    EventKind.WITHDRAWN: {"role": str, "reason": str},
    EventKind.UNHELD: {"holder": str},
    EventKind.PLANNED: {"code_hash": str, "expires_at": _NUMBER, "plan": dict},
    EventKind.CONFIRMED: {"digest": str},
    EventKind.STEP_STARTED: {"step": str},
    EventKind.STEP_DONE: {"step": str},
    EventKind.PUBLISHED: {"files": int, "size": int},
    EventKind.REFUSED: {"command": str, "reason": str},
    EventKind.WAIVED: {"target": str, "role": bool},
    EventKind.UNWAIVED: {"target": str},
}
_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "reason": str,
    "detail": str,
    "public_before": list,
}


class StateStore:
    """Events of every release in one SQLite file. Writes are durable when ``append`` returns.
    Over 250 lines because it holds every query of the one schema (see the module).

    The folded state of each release is cached with the id of the last event folded into it;
    a read folds only the events appended since (by this process or another one writing the
    same file), so a long log is not replayed on every call.
    """

    def __init__(
        self, path: Path, clock: Callable[[], float] = time.time, *, read_only: bool = False
    ) -> None:
        """Open (or, when missing and never recorded in, create) the state file; raises
        :class:`StateFileError` with one sentence when it cannot be the state file.
        ``read_only`` (``relbot check``): an existing file is read and checked, and nothing
        is written, created or migrated."""
        self.path = path
        self._clock = clock
        if special_file_kind(path):  # a FIFO would hang the first read
            raise state_file_error(path, IsADirectoryError() if path.is_dir() else OSError())
        if (lost := lost_state(path)) is not None:  # never a fresh file where one was
            raise StateFileError(lost)
        if (damaged := not_sqlite(path)) is not None:  # SQLite would take it for an empty one
            raise StateFileError(damaged)
        try:
            if read_only:
                self._db = sqlite3.connect(_read_only_uri(path), uri=True, check_same_thread=False)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as err:
            raise state_file_error(path, err) from err
        self._folded: dict[str, tuple[int, ReleaseState]] = {}  # tag → (last event id, state)
        self._tags_read = 0  # open_tags has read every event up to this id
        self._acted: set[str] = set()
        self._published: set[str] = set()
        self._gone = ""  # why the file is not the one opened any more, once it is not
        try:
            self._check_ours()
            if read_only:
                self._migrate(dry=True)
            else:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")  # the log is the publish journal
                self._migrate()
                self._check_writable()
            self._check_tables()
            recorded = self.last_id() if self.schema_version > 0 else 0  # 0: an empty file
            if recorded == 0 and recorded_marker(path).exists():
                raise StateFileError(_lost(path, "has no events"))
            self._identity = _identity(path)
            self._marked = read_only or (recorded > 0 and _mark_recorded(path))
        except (OSError, sqlite3.Error) as err:
            self._db.close()
            raise state_file_error(path, err) from err
        except (StateFileError, StorageError):
            self._db.close()
            raise

    def _check_ours(self) -> None:
        """Refuse another program's SQLite file before anything is written into it: one
        with tables that no migration of this schema version made."""
        version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        wanted = set(TABLES) if version >= SCHEMA_VERSION else set(_MADE_BY[:version])
        found = {
            str(row[0])
            for row in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if version > SCHEMA_VERSION or found <= wanted:
            return  # a newer relbot's (refused by _migrate, with its own sentence), or ours
        others = ", ".join(sorted(found - wanted)) or "none of relbot's"
        raise StateFileError(
            f"state: {self.path} is another program's SQLite file (its tables: {others}), "
            "not relbot's state file; point state at another file (it is created if missing)."
        )

    def _migrate(self, *, dry: bool = False) -> None:
        """Bring an older file up to this schema, one migration per transaction; refuse a
        file from a newer relbot rather than guess at it. ``dry``: only the refusal."""
        version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"{self.path} was written by a newer relbot (schema {version}, this one knows "
                f"{SCHEMA_VERSION}); upgrade relbot."
            )
        if dry:
            return
        for number in range(version + 1, SCHEMA_VERSION + 1):
            self._db.executescript(
                f"BEGIN; {MIGRATIONS[number - 1]}; PRAGMA user_version={number}; COMMIT;"
            )

    def _check_tables(self) -> None:
        """Refuse a file whose tables are not those the migrations made (one dropped or
        changed by hand): every later read would fail in the middle of a command. (A file
        of an older schema, read without migrating it: the tables it has so far.)"""
        made = set(_MADE_BY[: self.schema_version])
        for table, wanted in TABLES.items():
            if table not in made:
                continue
            found = tuple(row[1] for row in self._db.execute(f"PRAGMA table_info({table})"))
            if found != wanted:
                what = (
                    "is missing"
                    if not found
                    else f"has the columns {', '.join(found)} instead of {', '.join(wanted)}"
                )
                raise StateFileError(
                    f"state: {self.path} is not a state file this relbot can use (the table "
                    f"{table} {what}); {_RESTORE}."
                )

    def _check_writable(self) -> None:
        """Fail now, not at the first ``/hold``: the bot must be able to write its journal.
        SQLite opens a file it may not write read-only without a word, and even takes the
        write lock; only a write says so, and this one is rolled back."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(f"PRAGMA user_version={self.schema_version}")
        finally:
            self._db.execute("ROLLBACK")

    def check_every_event(self) -> None:
        """Read every event once and fold every release (``relbot check`` and the start of
        ``relbot run``): a file with an event this relbot cannot read is refused then, with
        one sentence, not in the middle of a publish. Every later read checks what it reads
        too, so ``status`` and ``audit`` refuse such an event with the same sentence. The
        folds are kept for later reads. Raises :class:`StateFileError`."""
        try:
            tags = [row[0] for row in self._db.execute("SELECT DISTINCT tag FROM events")]
            for text in tags:
                tag = self._tag(text)
                rows = self._db.execute(
                    "SELECT id, at, tag, actor, kind, data FROM events WHERE tag = ? ORDER BY id",
                    (text,),
                )
                events = self._events(rows)
                state = self._fold(tag, (e for e in events if e.kind is not EventKind.REFUSED))
                self._folded[text] = (events[-1].id, state)
        except sqlite3.Error as err:
            raise state_file_error(self.path, err) from err

    def _tag(self, text: object) -> ReleaseTag:
        try:
            tag = ReleaseTag.parse(text) if isinstance(text, str) else None
        except TagError:
            tag = None
        if tag is None or str(tag) != text:
            raise StateFileError(
                f"state: {self.path} has events of {shown(str(text))!r}, which is not a "
                f"release tag; {_RESTORE}."
            )
        return tag

    def _events(self, rows: Iterable[tuple[Any, ...]]) -> list[Event]:
        """Rows as events; :class:`StateFileError` at the first one relbot did not write."""
        try:
            return [_event(row) for row in rows]
        except _BadEvent as err:
            raise self._unreadable(err.ident, err.why) from None

    def _fold(
        self, tag: ReleaseTag, events: Iterable[Event], start: ReleaseState | None = None
    ) -> ReleaseState:
        """:func:`fold`, with an event it cannot apply reported as one sentence."""
        events = list(events)
        try:
            return fold(tag, events, start=start)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            pass
        state = start
        for event in events:  # find the event that does not fold, to name it
            try:
                state = fold(tag, [event], start=state)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
                why = f"{event.kind.value}: a field is missing or of the wrong type ({err})"
                raise self._unreadable(event.id, shown(why)) from None
        raise AssertionError("unreachable: folding one by one fails where all at once did")

    def _unreadable(self, ident: object, why: str) -> StateFileError:
        return StateFileError(
            f"state: {self.path} has an event this relbot cannot read (event {ident}: {why}); "
            f"{_RESTORE}."
        )

    @property
    def schema_version(self) -> int:
        version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        return version

    def _check_identity(self) -> None:
        """Raise :class:`StateGone` when the path no longer names the file opened: deleted,
        replaced, or swapped for a link. SQLite would go on writing into the file it holds
        open, which nobody will ever read again; so the bot stops recording (and acting,
        as every command and scan reads the state first), and says so once."""
        if not self._gone:
            now = _identity(self.path)
            if now == self._identity:
                return
            self._gone = _gone(self.path, now)
            log.error("%s", self._gone)
        raise StateGone(self._gone)

    def summary_ref(self, tag: ReleaseTag) -> str | None:
        row = self._db.execute("SELECT ref FROM summaries WHERE tag = ?", (str(tag),)).fetchone()
        return None if row is None else str(row[0])

    def set_summary_ref(self, tag: ReleaseTag, ref: str) -> None:
        try:
            self._check_identity()
            self._db.execute(
                "INSERT INTO summaries (tag, ref) VALUES (?, ?) "
                "ON CONFLICT (tag) DO UPDATE SET ref = excluded.ref",
                (str(tag), ref),
            )
        except sqlite3.OperationalError as err:  # where to edit: a restart posts anew
            log.warning("%s", self._write_error(err))
        except StateGone:
            pass  # said once, by the check

    def close(self) -> None:
        self._db.close()

    def append(self, tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Event:
        """Record one event, durable when this returns. Raises :class:`StateWriteError`
        when the file cannot be written (a full disk, a read-only file): nothing was
        recorded. A refusal that cannot be recorded is logged instead: it changed nothing."""
        at = self._clock()
        text = json.dumps(data, sort_keys=True)
        self._check_identity()
        try:
            cursor = self._db.execute(
                "INSERT INTO events (at, tag, actor, kind, data) VALUES (?, ?, ?, ?, ?)",
                (at, str(tag), actor, kind.value, text),
            )
        except sqlite3.OperationalError as err:
            error = self._write_error(err)
            if kind is EventKind.REFUSED:
                log.warning("%s The refusal of %r was not recorded.", error, data.get("command"))
                return Event(0, at, str(tag), actor, kind, data)
            raise error from err
        assert cursor.lastrowid is not None
        if not self._marked:  # after the commit: a marker never claims what is not there
            self._marked = _mark_recorded(self.path)
        return Event(cursor.lastrowid, at, str(tag), actor, kind, data)

    def last_id(self) -> int:
        """The id of the newest event of any release, 0 for none: it changes whenever
        anything is recorded (by this process or another), so views cache on it."""
        row = self._db.execute("SELECT MAX(id) FROM events").fetchone()
        return int(row[0] or 0)

    def _write_error(self, err: sqlite3.OperationalError) -> StateWriteError:
        """The one sentence of a write that failed: the disk is full, or the file cannot be
        written any more."""
        text = str(err).lower()
        if "full" in text:
            why = "the disk is full; free space there"
        elif "readonly" in text or "read-only" in text:
            why = "it is read-only now; give this user write access to it again"
        else:
            why = f"{err}; check the disk"
        return StateWriteError(f"Cannot write the state file {self.path}: {why}.")

    def events(self, tag: ReleaseTag) -> list[Event]:
        """``tag``'s events, oldest first; :class:`StateFileError` when one of them cannot
        be read or folded (so ``relbot audit`` shows a release only when it is sound)."""
        self._check_identity()
        rows = self._db.execute(
            "SELECT id, at, tag, actor, kind, data FROM events WHERE tag = ? ORDER BY id",
            (str(tag),),
        )
        events = self._events(rows)
        if events:  # folded as a check, and kept: what release() would fold next
            state = self._fold(tag, (e for e in events if e.kind is not EventKind.REFUSED))
            self._folded[str(tag)] = (events[-1].id, state)
        return events

    def release(self, tag: ReleaseTag) -> ReleaseState:
        """``tag``'s current state: the cached fold, plus the events appended since it was
        made. One indexed query when nothing was appended. The caller gets its own copy."""
        self._check_identity()
        key = str(tag)
        row = self._db.execute("SELECT MAX(id) FROM events WHERE tag = ?", (key,)).fetchone()
        top: int | None = row[0]
        last, state = self._folded.get(key, (0, None))
        if top is None:  # nobody acted on it: not cached, so asking about any tag grows nothing
            return ReleaseState(tag)
        if state is None or top != last:
            # Ids only grow, and each append commits before the next id is handed out, so
            # the events in (last, top] are exactly those this fold has not seen. A refusal
            # changes no state: it is never read.
            rows = self._db.execute(
                "SELECT id, at, tag, actor, kind, data FROM events "
                "WHERE tag = ? AND id > ? AND id <= ? AND kind != ? ORDER BY id",
                (key, last, top, EventKind.REFUSED.value),
            )
            state = self._fold(tag, self._events(rows), start=state)
            self._folded[key] = (top, state)
        return state.copy()

    def open_tags(self) -> list[ReleaseTag]:
        """Tags someone acted on (a refused command does not count) and not yet published,
        or with late files confirmed since the last publish.

        Kept up to date from the events appended since the last call (by any process), so a
        long log, refusals included, is read once."""
        self._check_identity()
        rows = self._db.execute(
            "SELECT id, tag, kind FROM events WHERE id > ? ORDER BY id", (self._tags_read,)
        )
        for ident, tag, kind in rows:
            if kind == EventKind.PUBLISHED.value:
                self._published.add(tag)
            elif kind == EventKind.CONFIRMED.value:  # late files: open again until published
                self._published.discard(tag)
                self._acted.add(tag)
            elif kind != EventKind.REFUSED.value:
                self._acted.add(tag)
            self._tags_read = ident
        return sorted(self._tag(tag) for tag in self._acted - self._published)

    def tags(self) -> list[ReleaseTag]:
        """Every tag the log mentions."""
        rows = self._db.execute("SELECT DISTINCT tag FROM events")
        return sorted(self._tag(row[0]) for row in rows)


def state_file_error(path: Path, err: BaseException) -> StateFileError:
    """One sentence saying why ``path`` cannot be the state file, and what to do."""
    text = str(err).lower()
    if path.is_dir():
        why = "it is a folder; point state at a file (it is created if missing)"
    elif path.exists() and not path.is_file():
        why = "it is not a regular file; point state at a file (it is created if missing)"
    elif "not a database" in text:
        why = _NOT_SQLITE
    elif "malformed" in text:
        return StateFileError(_damaged(path))
    elif "readonly" in text or "read-only" in text or getattr(err, "errno", 0) == errno.EROFS:
        why = "it is read-only; give this user write access to it and its folder"
    elif path.parent.exists() and not path.parent.is_dir():
        why = f"{path.parent} is not a folder"
    else:
        reason = getattr(err, "strerror", None) or str(err)
        why = f"{reason}; the folder must exist or be creatable, and be writable by this user"
    return StateFileError(f"state: cannot use {path} as the state file: {why}.")


def state_problems(path: Path) -> list[str]:
    """For ``relbot check``: why ``path`` cannot be the state file, read without writing
    anything (a missing file is fine: ``relbot run`` creates it, unless its marker says it
    was lost; whether its folder can be written is the preflight's)."""
    if special_file_kind(path):
        return [str(state_file_error(path, IsADirectoryError() if path.is_dir() else OSError()))]
    for problem in (lost_state(path), not_sqlite(path)):
        if problem is not None:
            return [problem]
    if not path.exists() or path.stat().st_size == 0:
        return []
    if not os.access(path, os.W_OK):  # what opening it for writing would say
        return [str(state_file_error(path, OSError(errno.EROFS, "read-only")))]
    try:
        store = StateStore(path, read_only=True)
        try:
            if store.schema_version > 0:  # else an empty database: relbot run makes the tables
                store.check_every_event()
        finally:
            store.close()
    except StateFileError as err:
        return [str(err)]
    except StorageError as err:  # a newer relbot's file
        return [f"state: {err}"]
    return []


def recorded_marker(state: Path) -> Path:
    """The file beside the state file that says events were recorded in it.

    Written once, when the first event is durable (and at any open of a file with events
    that lacks it), and never by anything else; so while it is there, a state file that is
    missing, empty or without events is one that was lost, not a first start. Beside the
    state file, not in the work folder: it is the state folder's own record (same owner,
    same backup, same filesystem; the work folder is the storage's, on the server with
    SFTP). Deleting the state file alone, or emptying it, leaves the marker; deleting the
    whole folder, or the marker, is a fresh start on purpose."""
    return state.with_name(state.name + ".recorded")


def lost_state(path: Path) -> str | None:
    """The sentence refusing a state file that is missing or empty while its marker says
    events were recorded in it; None when it is not so."""
    if not recorded_marker(path).exists():
        return None
    try:
        if path.stat().st_size > 0:
            return None
        what = "is empty (0 bytes)"
    except FileNotFoundError:
        what = "is missing"
    except OSError:
        return None  # said by whatever opens it
    return _lost(path, what)


def _lost(path: Path, what: str) -> str:
    marker = recorded_marker(path)
    return (
        f"state: {path} {what}, but relbot recorded events in it ({marker.name} beside it "
        "says so): the claims, holds and publishes of every release would be forgotten. "
        f"Restore {path.name} from a backup; to start afresh on purpose, delete {marker}"
        + (f" and {path}" if what != "is missing" else "")
        + "."
    )


_NOT_SQLITE = "it is not an SQLite file; point state at another file, or move it away"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def not_sqlite(path: Path) -> str | None:
    """The sentence refusing a file that is not an SQLite file or was cut short (SQLite
    takes a file shorter than its header for an empty database, and would write into it);
    None for a missing or empty file, or one with SQLite's header."""
    try:
        with path.open("rb") as file:
            head = file.read(100)
    except OSError:
        return None  # missing, or unreadable: said by whatever opens it
    if not head or (len(head) == 100 and head.startswith(_SQLITE_MAGIC)):
        return None
    if _SQLITE_MAGIC.startswith(head[:16]) or head.startswith(_SQLITE_MAGIC):
        return _damaged(path)
    return f"state: cannot use {path} as the state file: {_NOT_SQLITE}."


def _damaged(path: Path) -> str:
    return (
        f"state: cannot use {path} as the state file: it is damaged (cut short or "
        "overwritten); restore this file from a backup, or move it away to start afresh on "
        "purpose."
    )


def _read_only_uri(path: Path) -> str:
    """SQLite's URI that reads ``path`` and writes nothing beside it: ``mode=ro`` makes the
    ``-wal`` and ``-shm`` files when they are missing, so a file without them (no bot on it,
    every event in the file itself) is opened ``immutable``."""
    uri = path.resolve().as_uri() + "?mode=ro"
    if not path.with_name(path.name + "-wal").exists():
        uri += "&immutable=1"
    return uri


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    """The link's and the file's (device, inode), or None when the path names nothing."""
    try:
        link, file = os.lstat(path), os.stat(path)
    except OSError:
        return None
    return (link.st_dev, link.st_ino, file.st_dev, file.st_ino)


def _gone(path: Path, now: tuple[int, int, int, int] | None) -> str:
    if now is None:
        what = "was deleted"
    elif path.is_symlink():
        what = "was replaced by a link"
    else:
        what = "was replaced by another file"
    return (
        f"The state file {path} {what} while relbot ran: relbot records nothing more and "
        "acts on no command until it is restarted; put the bot's file back (from a "
        "backup) and restart relbot."
    )


def _mark_recorded(state: Path) -> bool:
    """Write the marker (see :func:`recorded_marker`) if it is not there, durably; True
    once it is. A marker that cannot be written is logged, and tried again later."""
    marker = recorded_marker(state)
    if marker.exists():
        return True
    text = (
        f"relbot recorded events in {state.name}. While this file is here, relbot refuses "
        f"to start on a missing or empty {state.name}: restore it from a backup. To start "
        "afresh on purpose, delete both.\n"
    )
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        folder = os.open(state.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except FileExistsError:
        return True
    except OSError as err:
        log.warning("cannot write %s (%s); tried again at the next event", marker, err.strerror)
        return False
    return True


_RESTORE = (
    "it was changed by something other than relbot: restore it from a backup, or upgrade "
    "relbot if a newer one wrote it"
)


class _BadEvent(Exception):
    def __init__(self, ident: object, why: str) -> None:
        super().__init__(why)
        self.ident = ident
        self.why = why


def _event(row: tuple[Any, ...]) -> Event:
    """One row as an event; :class:`_BadEvent` when it is not one relbot wrote."""
    ident, at, tag, actor, kind, data = row
    try:
        event_kind = EventKind(kind)
    except ValueError:
        raise _BadEvent(ident, f"its kind {shown(str(kind))!r} is unknown") from None
    if not isinstance(at, int | float) or not 0 <= at <= LAST_TIME:
        raise _BadEvent(ident, f"its time {shown(str(at))!r} is not a time")
    if not isinstance(actor, str) or not actor:
        raise _BadEvent(ident, "it names nobody")
    try:
        loaded = json.loads(data)
    except (TypeError, ValueError, RecursionError):
        raise _BadEvent(ident, "its data is not JSON") from None
    if not isinstance(loaded, dict):
        raise _BadEvent(ident, "its data is not a JSON object")
    if problem := _field_problem(event_kind, loaded):
        raise _BadEvent(ident, f"{event_kind.value}: {problem}")
    if event_kind is EventKind.PLANNED:
        # A code valid for longer than any clock can show (an old config's huge
        # confirm_timeout) is valid for ever: kept so, in a range every formatter takes.
        loaded["expires_at"] = min(float(loaded["expires_at"]), LAST_TIME)
    return Event(ident, float(at), tag, actor, event_kind, loaded)


def _field_problem(kind: EventKind, data: dict[str, Any]) -> str:
    """What ``data`` lacks for an event of ``kind``, or "" when it has it all."""
    for key, wanted in _REQUIRED.get(kind, {}).items():
        if key not in data:
            return f"{key!r} is missing"
        if not _is(data[key], wanted):
            return f"{key!r} is of the wrong type"
    for key, wanted in _OPTIONAL.items():
        if key in data and not _is(data[key], wanted):
            return f"{key!r} is of the wrong type"
    if kind is EventKind.PLANNED:
        plan = data["plan"]
        if not isinstance(plan.get("digest"), str) or not isinstance(plan.get("files"), list):
            return "its plan has no digest or no files"
        if not math.isfinite(data["expires_at"]):
            return "'expires_at' is not a time"
    return ""


def _is(value: object, wanted: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool) and wanted in (int, _NUMBER):  # JSON's true is not a number
        return False
    return isinstance(value, wanted)


class OwnerLock:
    """Held by the one ``relbot run`` that owns a state file, for as long as it runs."""

    def __init__(self, state_path: Path) -> None:
        self.path = state_path.with_name(state_path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Raises :class:`StateLocked` at once if another process holds the lock, and
        :class:`StateFileError` when the lock file cannot be made."""
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StateLocked(
                f"Another relbot (pid {owner}) is running on {self.path.with_suffix('')}; "
                "stop it first, only one may own a state file."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise StateFileError(
                f"state: cannot create the lock file {self.path} ({err.strerror}); the "
                "state file's folder must be writable by this user."
            ) from err

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
