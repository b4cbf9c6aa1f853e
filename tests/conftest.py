"""Shared fixtures: a release team on real folders and a real SQLite file, with a channel that
records what the bot posts and a clock the tests move."""

from __future__ import annotations

import io
import locale
import logging
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

import pytest

from bot.app import build_verifier
from bot.config import load_config
from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.journal.store import StateStore
from bot.logs import setup_logging
from bot.ports import Chat
from bot.ports.messages import ChannelKind, ChannelMessage, Reply
from bot.service.connections import Connections
from bot.service.gate import Gate
from bot.storage.local import LocalStorage
from tests.pinned import NO_SIGNATURES, RELEASE_CYCLE_LINE

TEAM_TOML = f"""
    {RELEASE_CYCLE_LINE.strip()}
    profile = "cpython"
    state = "data/state.db"
    confirm_timeout = 600

    [storage]
    kind = "local"
    staging = "data/staging"
    public = "data/public"

    [people.hugo]
    rm = ["3.14", "3.15"]
    roles = ["source", "docs"]

    [people.alice]
    rm = ["3.14"]

    [people.steve]
    roles = ["windows"]

    [people.ned]
    roles = ["macos"]

    [people.eve]
"""


# The cpython profile requires Sigstore signatures (from 3.10); tests that are not about
# signatures opt out as an operator would, in the config. Those about signatures set their own
# [signatures] table (tests/signing_fixtures.py).
def with_signing_opt_out(toml: str) -> str:
    """``toml`` with the explicit opt-out, unless it has a [signatures] table of its own."""
    return toml if "[signatures]" in toml else toml + NO_SIGNATURES


class RecordingChat:
    """The release channel, remembered: posts in order, and edits of earlier posts."""

    def __init__(self) -> None:
        self.posts: list[ChannelMessage] = []
        self.updates: list[tuple[str, ChannelMessage]] = []

    async def post(self, message: ChannelMessage) -> str:
        self.posts.append(message)
        return str(len(self.posts))

    async def update(self, ref: str, message: ChannelMessage) -> None:
        self.updates.append((ref, message))

    def texts(self, kind: ChannelKind) -> list[str]:
        return [m.text for m in self.posts if m.kind is kind]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


ChatT = TypeVar("ChatT", bound=Chat)


class BaseWorld(Generic[ChatT]):
    """A release team rehearsing on tmp folders: stage files, type commands, restart. Its
    release channel is a ``ChatT``: :class:`World`'s records what the bot posts, a platform's
    world (Slack, Discord) talks to the platform's mock."""

    def __init__(
        self,
        root: Path,
        extra_toml: str = "",
        *,
        team_toml: str = TEAM_TOML,
        chat: ChatT,
    ) -> None:
        self.root = root
        toml = with_signing_opt_out(textwrap.dedent(team_toml) + textwrap.dedent(extra_toml))
        (root / "relbot.toml").write_text(toml, encoding="utf-8")
        self.config = load_config(root / "relbot.toml")
        self.profile = self.config.profile
        self.staging = root / "data" / "staging"
        self.public = root / "data" / "public"
        self.clock = Clock()
        self.chat = chat
        # Called instead of sleeping while /ready lets a listing settle: tests use it to
        # change staging between the two listings.
        self.during_settle: list[Callable[[], object]] = []
        self.storage = self.make_storage()
        self.verifier = build_verifier(self.config)
        self.gate = self.start()

    def make_storage(self) -> LocalStorage:
        return LocalStorage(self.staging, self.public)

    def start(self, storage: LocalStorage | None = None) -> Gate:
        """A fresh gate (a restarted bot) on the same state file and folders."""
        self.store = StateStore(self.root / "data" / "state.db", clock=self.clock)
        # What the gate talks through: a test gives the gate a registry, a forum… here.
        self.conn = Connections(storage or self.storage, self.chat, verifier=self.verifier)
        self.gate = Gate(
            self.config,
            self.store,
            self.conn,
            clock=self.clock,
            sleep=self._settle,
            code_factory=self._codes(),
        )
        return self.gate

    async def _settle(self, seconds: float) -> None:
        while self.during_settle:
            self.during_settle.pop(0)()

    @staticmethod
    def _codes() -> Callable[[], str]:
        counter = iter(range(1, 10_000))
        return lambda: f"CODE{next(counter):04d}"

    # -- staging -----------------------------------------------------------------------------

    def stage(
        self,
        tag: str,
        roles: Iterable[str] | None = None,
        skip: Iterable[str] = (),
        content: bytes | None = None,
    ) -> list[str]:
        """Write every required file of ``roles`` (default: all) for ``tag``; returns paths."""
        parsed = ReleaseTag.parse(tag)
        wanted = set(roles) if roles is not None else None
        written = []
        for expected in self.profile.expected(parsed):
            if (wanted is not None and expected.role not in wanted) or expected.path in skip:
                continue
            self.write(tag, expected.path, content or f"{expected.path} built for {tag}\n")
            written.append(expected.path)
        return written

    def write(self, tag: str, path: str, content: str | bytes) -> Path:
        target = self.staging / tag / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        target.write_bytes(content)
        return target

    def public_files(self) -> set[str]:
        if not self.public.exists():
            return set()
        return {str(p.relative_to(self.public)) for p in self.public.rglob("*") if p.is_file()}

    def staged_files(self, tag: str) -> set[str]:
        folder = self.staging / tag
        if not folder.exists():
            return set()
        return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}

    # -- talking -----------------------------------------------------------------------------

    async def say(self, person: str, line: str) -> Reply:
        return await self.gate.handle("console", person, line)

    async def ready_all(self, tag: str) -> None:
        parsed = ReleaseTag.parse(tag)
        holders = {"source": "hugo", "docs": "hugo", "windows": "steve", "macos": "ned"}
        for role in self.profile.roles_for(parsed):
            reply = await self.say(holders[role], f"/ready {role} {tag}")
            assert not reply.private, reply.text

    async def plan(self, tag: str, person: str = "hugo") -> str:
        """``/publish TAG``; returns the confirm line it prints."""
        reply = await self.say(person, f"/publish {tag}")
        assert reply.confirm is not None, reply.text
        assert reply.confirm.line in reply.text
        return reply.confirm.line

    def events(self, tag: str, kind: EventKind | None = None) -> list[str]:
        return [
            e.kind.value
            for e in self.store.events(ReleaseTag.parse(tag))
            if kind is None or e.kind is kind
        ]


class World(BaseWorld[RecordingChat]):
    """The team's world with a channel that records what the bot posts (``chat.texts``...)."""

    def __init__(
        self,
        root: Path,
        extra_toml: str = "",
        *,
        team_toml: str = TEAM_TOML,
        chat: RecordingChat | None = None,
    ) -> None:
        super().__init__(root, extra_toml, team_toml=team_toml, chat=chat or RecordingChat())


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


@pytest.fixture
def debug_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """relbot's own logging set-up, as ``relbot run --log-level debug`` makes it (filters
    included), writing into a buffer; the root logger is put back afterwards."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    setup_logging("debug", "text")
    yield stream
    root.handlers[:], root.level = saved


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """The process's locale is plain C (a server without a UTF-8 locale) for the test."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


def uses_pythondotorg(item: pytest.Item) -> bool:
    """Whether ``item`` runs python.org's own app: through its session fixture, or as the
    ``real`` side of tests/registry's ``pydotorg`` fixture (which asks for it by name)."""
    if "pythondotorg_app" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("pydotorg") == "real"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``make test`` runs the tests in several workers (pytest-xdist, ``--dist loadgroup``):
    the tests of python.org's app go to one of them, which starts the app (PostgreSQL and
    Django, the costliest server of the suite) once for all."""
    for item in items:
        if uses_pythondotorg(item):
            item.add_marker(pytest.mark.xdist_group("pythondotorg"))
