"""The storage primitives behind the install index, on every backend (local and a real sshd):
read a small public file, set a staged file aside, put it back, replace a live file by one
rename."""

from __future__ import annotations

import os

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.storage.aside import ASIDE_FOLDER
from tests.storage.conftest import Backend

TAG = ReleaseTag.parse("3.14.1")
NAME = "index-windows.json"


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


def test_set_aside_moves_the_staged_file_and_replaces_an_older_copy(backend: Backend) -> None:
    storage = backend.make()
    storage.set_aside(TAG, NAME)  # nothing staged: nothing to do
    assert storage.read_aside(TAG, NAME, 100) is None
    backend.write("3.14.1", NAME, "first")
    storage.set_aside(TAG, NAME)
    backend.write("3.14.1", NAME, "second")
    storage.set_aside(TAG, NAME)
    assert storage.read_aside(TAG, NAME, 100) == b"second"
    assert NAME not in backend.staged_files("3.14.1")


def test_set_aside_refuses_a_symlink_and_leaves_it(backend: Backend) -> None:
    (backend.staging / "3.14.1").mkdir()
    os.symlink("/etc/hostname", backend.staging / "3.14.1" / NAME)
    with pytest.raises(StorageError, match="not a regular file"):
        backend.make().set_aside(TAG, NAME)
    assert (backend.staging / "3.14.1" / NAME).is_symlink()


def test_put_back_restores_the_file_but_never_replaces_a_newer_upload(backend: Backend) -> None:
    storage = backend.make()
    backend.write("3.14.1", NAME, "confirmed")
    storage.set_aside(TAG, NAME)
    storage.put_back(TAG, NAME)
    assert backend.staged_files("3.14.1")[NAME] == b"confirmed"
    assert not (backend.staging / ASIDE_FOLDER / "3.14.1").exists()

    storage.set_aside(TAG, NAME)
    backend.write("3.14.1", NAME, "uploaded since")
    storage.put_back(TAG, NAME)
    assert backend.staged_files("3.14.1")[NAME] == b"uploaded since"


def test_replace_public_swaps_the_live_file_by_one_rename(backend: Backend) -> None:
    storage = backend.make()
    live = backend.public / NAME
    live.write_bytes(b"old index")
    reader = live.open("rb")  # a download under way keeps the old file, whole
    backend.write("3.14.1", NAME, "new index")
    storage.set_aside(TAG, NAME)
    storage.replace_public(TAG, NAME, NAME)
    assert live.read_bytes() == b"new index"
    assert reader.read() == b"old index"
    reader.close()
    assert storage.read_aside(TAG, NAME, 100) is None
    assert not (backend.staging / ASIDE_FOLDER / "3.14.1").exists()


def test_replace_public_creates_the_first_live_file(backend: Backend) -> None:
    storage = backend.make()
    backend.write("3.14.1", NAME, "first index")
    storage.set_aside(TAG, NAME)
    storage.replace_public(TAG, NAME, NAME)
    assert (backend.public / NAME).read_bytes() == b"first index"


def test_the_aside_folder_is_the_bots_alone(backend: Backend) -> None:
    backend.write("3.14.1", NAME, "confirmed")
    backend.make().set_aside(TAG, NAME)
    assert (backend.staging / ASIDE_FOLDER).stat().st_mode & 0o777 == 0o700
