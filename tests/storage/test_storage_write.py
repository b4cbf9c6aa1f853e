"""``Storage.write`` (small files such as signatures, put in staging by ``relbot sign``), on
every backend: whole or not at all, and never over a file unless asked."""

from __future__ import annotations

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from tests.storage.conftest import Backend

TAG = "3.14.1"
T = ReleaseTag.parse(TAG)


def test_a_new_file_is_written_whole_and_no_temporary_file_stays(backend: Backend) -> None:
    backend.write(TAG, "Python-3.14.1.tgz", "tgz")
    storage = backend.make()
    storage.write(T, "Python-3.14.1.tgz.sigstore", b'{"bundle": 1}\n')
    assert backend.staged_files(TAG) == {
        "Python-3.14.1.tgz": b"tgz",
        "Python-3.14.1.tgz.sigstore": b'{"bundle": 1}\n',
    }
    assert storage.read(T, "Python-3.14.1.tgz.sigstore", 100) == b'{"bundle": 1}\n'


def test_an_existing_file_is_never_overwritten_without_replace(backend: Backend) -> None:
    backend.write(TAG, "Python-3.14.1.tgz.sigstore", "someone else's")
    storage = backend.make()
    with pytest.raises(
        StorageError, match=r"Python-3.14.1.tgz.sigstore already exists .*not overwritten"
    ):
        storage.write(T, "Python-3.14.1.tgz.sigstore", b"mine")
    assert backend.staged_files(TAG) == {"Python-3.14.1.tgz.sigstore": b"someone else's"}


def test_replace_swaps_the_content_in_one_rename(backend: Backend) -> None:
    backend.write(TAG, "docs/python-3.14.1-docs.epub.sig", "stale")
    storage = backend.make()
    storage.write(T, "docs/python-3.14.1-docs.epub.sig", b"fresh\n", replace=True)
    assert backend.staged_files(TAG) == {"docs/python-3.14.1-docs.epub.sig": b"fresh\n"}


def test_a_path_outside_the_release_is_refused(backend: Backend) -> None:
    backend.write(TAG, "Python-3.14.1.tgz", "tgz")
    with pytest.raises(StorageError):
        backend.make().write(T, "../escape.sig", b"x")
    assert not (backend.staging / "escape.sig").exists()


def test_the_same_content_found_in_place_is_a_finished_write(backend: Backend) -> None:
    """A repeated write (say, a retry whose first attempt landed but whose answer was lost)."""
    backend.write(TAG, "Python-3.14.1.tgz.sig", "c2ln\n")
    backend.make().write(T, "Python-3.14.1.tgz.sig", b"c2ln\n")
    assert backend.staged_files(TAG) == {"Python-3.14.1.tgz.sig": b"c2ln\n"}
