"""Storage test fixtures: a real OpenSSH server on loopback, and each Storage backend on
real folders, with a way to make a backend die after its k-th move."""
# The crash points are the backends' own move calls, so the fakes subclass their private
# hooks; nothing here is imported by the bot.

from __future__ import annotations

import hashlib
import os
import posixpath
import resource
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.ports import PromotionReport, Storage
from bot.storage.freezer import make_folders
from bot.storage.local import LocalStorage
from bot.storage.sftp import Connection, Move, SftpStorage
from bot.storage.sftp_fs import SftpFs
from tests.sshd import MISSING, SSHD, SshServer
from tests.uploader import (  # noqa: F401  (fixtures: a real uploader)
    Uploader,
    shared_root,
    uploader,
)

T = TypeVar("T")


class Crash(Exception):
    """Injected: the process dies at this point."""


def serve(root: Path, extra_config: str = "") -> Iterator[SshServer]:
    """A started sshd configured in ``root`` (plus ``extra_config``), stopped afterwards:
    ``yield from`` it in a fixture."""
    if not SSHD.exists():
        pytest.fail(MISSING, pytrace=False)
    server = SshServer.create(root, extra_config=extra_config)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """One sshd for the whole session; tests must not stop it (use ``own_sshd``)."""
    yield from serve(tmp_path_factory.mktemp("sshd"))


@pytest.fixture(scope="session")
def sftp_only_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """An sshd that allows SFTP and nothing else, as some hosting setups do."""
    yield from serve(tmp_path_factory.mktemp("sshd-sftp-only"), "ForceCommand internal-sftp")


@pytest.fixture
def own_sshd(tmp_path: Path) -> Iterator[SshServer]:
    """An sshd this test may stop and restart (on the same port)."""
    yield from serve(tmp_path / "own-sshd")


def sftp_storage(
    server: SshServer,
    staging: Path,
    public: Path,
    cls: type[SftpStorage] = SftpStorage,
    **kw: object,
) -> SftpStorage:
    """A storage on ``server``; on loopback, server paths are this machine's paths."""
    return cls(
        "127.0.0.1",
        server.port,
        server.user,
        server.client_key,
        server.known_hosts,
        str(staging),
        str(public),
        connect_timeout=5,
        **kw,  # type: ignore[arg-type]
    )


class CrashingLocal(LocalStorage):
    """Dies right after its (budget+1)-th primitive move: a link (before the unlink that
    completes the move) or a folder rename."""

    budget = 0

    def _spend(self) -> None:
        if self.budget == 0:
            raise Crash
        self.budget -= 1

    def _link(self, source: Path, target: Path) -> None:
        super()._link(source, target)
        self._spend()

    def _rename(self, source: Path, target: Path) -> None:
        super()._rename(source, target)
        self._spend()


class CrashingSftp(SftpStorage):
    """The same points as :class:`CrashingLocal`: the batch moves ``budget`` files, links the
    next one and dies before removing its staging copy."""

    budget = 0

    def _rename(self, conn: Connection, source: str, target: str) -> None:
        super()._rename(conn, source, target)
        if self.budget == 0:
            raise Crash
        self.budget -= 1

    def _run_batch(self, conn: Connection, moves: list[Move]) -> bool:
        if self.budget >= len(moves):
            self.budget -= len(moves)
            return super()._run_batch(conn, moves)
        super()._run_batch(conn, moves[: self.budget])
        half = moves[self.budget]
        make_folders(self._fs(conn), posixpath.dirname(half.target), "/", 0o755)
        self._link(conn, half.source, half.target)
        raise Crash


@dataclass
class Backend:
    """A storage backend on real folders: ``make()`` a fresh instance (a restarted bot),
    ``crashing(k)`` one that dies after k moves."""

    name: str
    staging: Path
    public: Path
    make: Callable[[], Storage]
    crashing: Callable[[int], Storage]

    @property
    def work(self) -> Path:
        """The bot's work folder (the default: beside public)."""
        return self.public.parent / f".relbot-{self.public.name}"

    def copy_of(self, tag: str, target: str) -> Path:
        """Where the bot's copy of a file going to ``target`` waits."""
        return self.work / "frozen" / tag / "tree" / target

    def write(self, tag: str, path: str, content: str | bytes) -> Path:
        file = self.staging / tag / path
        file.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        file.write_bytes(content)
        return file

    def public_files(self) -> dict[str, bytes]:
        """Every public entry (relative path → content; symlinks as ``b"-> target"``)."""
        return _tree(self.public)

    def staged_files(self, tag: str) -> dict[str, bytes]:
        return _tree(self.staging / tag)


def _tree(root: Path) -> dict[str, bytes]:
    found = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            found[rel] = (
                b"-> " + os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            )
    return found


@pytest.fixture(params=["local", "sftp"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    if request.param == "local":

        def crashing_local(k: int) -> Storage:
            storage = CrashingLocal(staging, public)
            storage.budget = k
            return storage

        return Backend(
            "local", staging, public, lambda: LocalStorage(staging, public), crashing_local
        )
    server: SshServer = request.getfixturevalue("sshd")
    made: list[SftpStorage] = []

    def make(cls: type[SftpStorage] = SftpStorage) -> SftpStorage:
        made.append(sftp_storage(server, staging, public, cls))
        return made[-1]

    def crashing_sftp(k: int) -> Storage:
        storage = make(CrashingSftp)
        assert isinstance(storage, CrashingSftp)
        storage.budget = k
        return storage

    def close_all() -> None:
        for storage in made:
            storage.close()

    request.addfinalizer(close_all)
    return Backend("sftp", staging, public, make, crashing_sftp)


def staged_release(tmp_path: Path, tag: str, paths: list[str]) -> Backend:
    """Staging holding ``paths`` of ``tag`` (each reading "content of PATH"), an empty public
    folder; for ``plan_for`` and the paths (the storage is made by each test)."""
    staging, public = staging_and_public(tmp_path)
    backend = Backend("sftp", staging, public, lambda: None, lambda k: None)  # type: ignore[arg-type,return-value]
    for path in paths:
        backend.write(tag, path, f"content of {path}")
    return backend


@pytest.fixture
def closing() -> Iterator[list[SftpStorage]]:
    """Storages a test made, closed after it."""
    made: list[SftpStorage] = []
    yield made
    for storage in made:
        storage.close()


@contextmanager
def address_space_capped(headroom: int = 1 << 30) -> Iterator[None]:
    """Cap this process's address space at what it uses now plus ``headroom`` bytes, then
    lift the cap: a read that asks for a huge file whole fails at once (MemoryError)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    status = Path("/proc/self/status").read_text()
    used = next(int(line.split()[1]) * 1024 for line in status.splitlines() if "VmSize" in line)
    resource.setrlimit(resource.RLIMIT_AS, (used + headroom, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def on_fs(storage: SftpStorage, op: Callable[[SftpFs], T]) -> T:
    """``op`` on the storage's filesystem interface, over its connection."""
    return storage._ssh.call("test", lambda conn: op(storage._fs(conn)))


def as_uploader(
    server: SshServer, account: Uploader, staging: Path, public: Path, **kw: object
) -> SftpStorage:
    """A storage whose SSH user is the uploader's (non-root) account."""
    return SftpStorage(
        "127.0.0.1",
        server.port,
        account.name,
        account.authorize(),
        server.known_hosts,
        str(staging),
        str(public),
        connect_timeout=5,
        **kw,  # type: ignore[arg-type]
    )


def staging_and_public(tmp_path: Path) -> tuple[Path, Path]:
    """Two empty folders of this machine, the staging and the public root."""
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    return staging, public


def publish(storage: Storage, plan: PublishPlan) -> PromotionReport:
    """What a confirmation does to storage: the bot's copies, then the promotion."""
    assert storage.freeze(plan) == []
    return storage.promote(plan)


def plan_for(backend: Backend, tag: str, paths: list[str]) -> PublishPlan:
    """The plan the gate would build for these staged files (CPython's layout: docs/ to
    doc/TAG/, the rest to X.Y.Z/; docs first, ``windows-*.json`` last)."""
    release = ReleaseTag.parse(tag)
    files = []
    for path in paths:
        if path.startswith("docs/"):
            target, role, rank = f"doc/{tag}/{path.removeprefix('docs/')}", "docs", 0
        else:
            name = path.rsplit("/", 1)[-1]
            index = name.startswith("windows-") and name.endswith(".json")
            target, role, rank = f"{release.version}/{path}", "windows", 2 if index else 1
        data = (backend.staging / tag / path).read_bytes()
        files.append(
            (rank, PlanFile(path, target, role, len(data), hashlib.sha256(data).hexdigest()))
        )
    return PublishPlan(release, tuple(f for _, f in sorted(files, key=lambda r: (r[0], r[1].path))))
