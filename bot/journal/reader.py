"""The event log as a process that is not the bot reads it (``relbot wait``): read-only,
without the bot's lock, and without ever blocking it.

SQLite in WAL mode lets a reader see every committed event while the bot writes: a read
never waits for a write nor makes one wait. The connection is opened ``mode=ro``, so a bug
here can never change the journal.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from bot.domain.history import Event, EventKind, ReleaseState, fold
from bot.domain.tags import ReleaseTag
from bot.errors import StateFileError, TagError
from bot.journal.store import SCHEMA_VERSION


class LogReader:
    """Releases' events and folded states, read incrementally."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise StateFileError(
                f"state: there is no state file at {path}; start the bot (relbot run) with "
                "this config first, or name the bot's config with --config."
            )
        try:
            self._db = sqlite3.connect(
                path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False
            )
            version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.Error as err:
            raise StateFileError(f"state: cannot read {path} ({err}).") from err
        if version > SCHEMA_VERSION:  # every older schema has the same events table
            self._db.close()
            raise StateFileError(
                f"state: {path} was written by a newer relbot (schema {version}, this one "
                f"reads up to {SCHEMA_VERSION}); upgrade relbot."
            )
        if version < 1:
            self._db.close()
            raise StateFileError(f"state: {path} is not a relbot state file.")
        self.path = path
        self._seen: dict[str, tuple[tuple[Event, ...], ReleaseState]] = {}

    def close(self) -> None:
        self._db.close()

    def tags(self) -> list[ReleaseTag]:
        """Every tag the log mentions (those it cannot parse are left out)."""
        found = []
        for (text,) in self._db.execute("SELECT DISTINCT tag FROM events"):
            try:
                found.append(ReleaseTag.parse(str(text)))
            except TagError:
                continue
        return sorted(found)

    def look(self, tag: ReleaseTag) -> tuple[tuple[Event, ...], ReleaseState]:
        """``tag``'s events (oldest first, refusals included) and its state now. Reads only
        the events appended since the last look: one indexed query, which returns nothing
        when nothing was recorded."""
        key = str(tag)
        events, state = self._seen.get(key, ((), ReleaseState(tag)))
        rows = self._db.execute(
            "SELECT id, at, tag, actor, kind, data FROM events WHERE tag = ? AND id > ? "
            "ORDER BY id",
            (key, events[-1].id if events else 0),
        )
        new = tuple(_event(row) for row in rows)
        if new:
            events, state = events + new, fold(tag, new, start=state)
            self._seen[key] = (events, state)
        return events, state.copy()


def _event(row: tuple[int, float, str, str, str, str]) -> Event:
    ident, at, tag, actor, kind, data = row
    return Event(ident, at, tag, actor, EventKind(kind), json.loads(data))
