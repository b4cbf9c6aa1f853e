"""The storage behind the install index, on every backend (local and a real sshd): read a
small public file; the bot's copy of a staged file that replaces a live one, made at the
confirmation into its aside area; the live file replaced by one rename."""

from __future__ import annotations

import hashlib
import os
import stat

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from tests.storage.conftest import Backend

TAG = ReleaseTag.parse("3.14.1")
NAME = "index-windows.json"


def replacing(backend: Backend, content: bytes, live: str = "absent") -> PublishPlan:
    """A plan whose one file replaces the live index (as the gate plans it)."""
    backend.write("3.14.1", NAME, content)
    sha = hashlib.sha256(content).hexdigest()
    return PublishPlan(TAG, (PlanFile(NAME, NAME, "windows", len(content), sha, live),))


def test_read_public_reads_a_small_file_and_says_none_when_absent(backend: Backend) -> None:
    storage = backend.make()
    assert storage.read_public(NAME, 100) is None
    (backend.public / NAME).write_bytes(b'{"versions": []}')
    assert storage.read_public(NAME, 100) == b'{"versions": []}'
    with pytest.raises(StorageError, match="larger than 8 bytes"):
        storage.read_public(NAME, 8)


def test_read_public_refuses_a_symlink(backend: Backend) -> None:
    (backend.public / "elsewhere.json").write_text("{}")
    os.symlink(backend.public / "elsewhere.json", backend.public / NAME)
    with pytest.raises(StorageError, match="not a regular file"):
        backend.make().read_public(NAME, 100)


def test_the_freeze_copies_a_replacing_file_aside_and_leaves_staging_alone(
    backend: Backend,
) -> None:
    storage = backend.make()
    assert storage.read_aside(TAG, NAME, 100) is None  # nothing copied yet
    plan = replacing(backend, b"confirmed")

    assert storage.freeze(plan) == []

    assert storage.read_aside(TAG, NAME, 100) == b"confirmed"
    assert backend.staged_files("3.14.1") == {NAME: b"confirmed"}  # the original stays
    backend.write("3.14.1", NAME, "uploaded after the confirmation")
    assert storage.read_aside(TAG, NAME, 100) == b"confirmed"


def test_a_symlink_staged_as_the_index_is_never_copied(backend: Backend) -> None:
    plan = replacing(backend, b"{}")
    (backend.staging / "3.14.1" / NAME).unlink()
    os.symlink("/etc/hostname", backend.staging / "3.14.1" / NAME)
    assert backend.make().freeze(plan) == [f"{NAME} is not a regular file"]
    assert backend.make().read_aside(TAG, NAME, 100) is None
    assert (backend.staging / "3.14.1" / NAME).is_symlink()


def test_replace_public_swaps_the_live_file_for_the_bots_copy_by_one_rename(
    backend: Backend,
) -> None:
    (backend.public / NAME).write_text("live")
    storage = backend.make()
    plan = replacing(backend, b"new index", live=hashlib.sha256(b"live").hexdigest())
    storage.freeze(plan)
    inode = (backend.work / "aside" / "3.14.1" / NAME).stat().st_ino

    storage.replace_public(TAG, NAME, NAME)

    live = backend.public / NAME
    assert live.read_bytes() == b"new index"
    assert live.stat().st_ino == inode  # the bot's copy itself, not the staged file
    assert stat.S_IMODE(live.stat().st_mode) == 0o444
    assert storage.read_aside(TAG, NAME, 100) is None


def test_replace_public_creates_the_first_live_file(backend: Backend) -> None:
    storage = backend.make()
    storage.freeze(replacing(backend, b"first"))
    storage.replace_public(TAG, NAME, NAME)
    assert (backend.public / NAME).read_text() == "first"


def test_the_aside_area_is_the_bots_alone(backend: Backend) -> None:
    backend.make().freeze(replacing(backend, b"{}"))
    for area in (backend.work, backend.work / "aside", backend.work / "frozen"):
        assert stat.S_IMODE(area.stat().st_mode) == 0o700
        assert area.stat().st_uid == os.getuid()
