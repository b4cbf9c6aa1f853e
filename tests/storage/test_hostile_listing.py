"""The listing contract for odd staging entries, on both backends: reported with the
reason, never followed, never a crash."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.domain.files import RELEASE_FOLDER, Listing
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.ports import Storage
from bot.storage import walk
from bot.storage.walk import MAX_DEPTH
from tests.hostile_files import deep_tree_for
from tests.sshd import SshServer
from tests.storage.conftest import Backend, sftp_storage

TAG = "3.14.0rc2"
RC2 = ReleaseTag.parse(TAG)

Lister = Callable[[Storage], Listing | None]


@pytest.fixture(params=["alone", "scan"])
def listed(request: pytest.FixtureRequest, backend: Backend) -> Lister:
    """The release's listing as a command takes it (``list_staging``), or as a scan does:
    over SFTP, from the one command that lists every open release (``list_all_staging``)."""
    if request.param == "alone":
        return lambda storage: storage.list_staging(RC2)

    def from_the_scan(storage: Storage) -> Listing | None:
        found = storage.list_all_staging([RC2])
        if backend.name == "local":  # no one look: the scan lists each local release alone
            assert found == {}
            return storage.list_staging(RC2)
        assert TAG in found  # answered by the one command
        return found[TAG]

    return from_the_scan


def test_a_symlinked_release_folder_is_one_problem_entry_and_is_listed_as_staged(
    backend: Backend, listed: Lister, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Python-3.14.0rc2.tgz").write_bytes(b"x")
    (backend.staging / TAG).symlink_to(elsewhere)
    storage = backend.make()

    listing = listed(storage)

    assert listing is not None and list(listing) == [RELEASE_FOLDER]
    entry = listing[RELEASE_FOLDER]
    assert not entry.regular and "symbolic link" in entry.problem
    assert str(elsewhere) in entry.problem
    assert storage.staged_tags() == [TAG]  # so scans show it


def test_names_that_are_not_printable_utf8_are_reported_escaped(
    backend: Backend, listed: Lister
) -> None:
    backend.write(TAG, "Python-3.14.0rc2.tgz", "ok")
    backend.write(TAG, os.fsdecode(b"bad\xffname.txt"), "x")
    backend.write(TAG, "two\nlines.txt", "x")
    backend.write(TAG, "esc\x1b[2Kape.txt", "x")

    listing = listed(backend.make())

    assert listing is not None
    assert set(listing) == {
        "Python-3.14.0rc2.tgz",
        "bad\\xffname.txt",
        "two\\nlines.txt",
        "esc\\x1b[2Kape.txt",
    }
    for path, entry in listing.items():
        assert entry.regular == (path == "Python-3.14.0rc2.tgz")
        path.encode("utf-8")  # printable anywhere


def test_empty_folders_are_listed_so_no_promotion_carries_them(
    backend: Backend, listed: Lister
) -> None:
    backend.write(TAG, "Python-3.14.0rc2.tgz", "ok")
    (backend.staging / TAG / "junkdir" / "deeper").mkdir(parents=True)

    listing = listed(backend.make())

    assert listing is not None
    assert listing["junkdir/deeper/"].is_empty_folder
    assert "junkdir/" not in listing  # it holds a folder: not empty


def test_check_finds_staging_and_public_one_folder_on_the_server(
    sshd: SshServer, tmp_path: Path
) -> None:
    real = tmp_path / "srv" / "files"
    real.mkdir(parents=True)
    (tmp_path / "srv" / "public").symlink_to(real)
    storage = sftp_storage(sshd, real, tmp_path / "srv" / "public")
    try:
        problems = storage.check()
    finally:
        storage.close()

    assert len(problems) == 1
    assert "storage.staging and storage.public overlap" in problems[0]


def test_a_staged_file_with_another_hard_link_says_so(
    backend: Backend, listed: Lister, tmp_path: Path
) -> None:
    staged = backend.write(TAG, "Python-3.14.0rc2.tgz", "ok")
    backend.write(TAG, "Python-3.14.0rc2.tar.xz", "ok")
    os.link(staged, tmp_path / "kept-elsewhere.tgz")

    listing = listed(backend.make())

    assert listing is not None
    assert listing["Python-3.14.0rc2.tgz"].links == 2
    assert listing["Python-3.14.0rc2.tar.xz"].links == 1


# -- staging read as untrusted data: special files, links, depth, size ------------------------


def special_files(backend: Backend) -> None:
    """A FIFO, a link to /dev/zero and a link to /etc/passwd, each where a file is expected,
    and a folder swapped for a link to /etc (with a file the listing would name)."""
    backend.write(TAG, "Python-3.14.0rc2.tgz", "ok")
    folder = backend.staging / TAG
    os.mkfifo(folder / "python-3.14.0rc2-amd64.exe")
    (folder / "python-3.14.0rc2-arm64.exe").symlink_to("/dev/zero")
    (folder / "python-3.14.0rc2.exe").symlink_to("/etc/passwd")
    (folder / "docs").symlink_to("/etc")


def test_special_files_are_listed_as_not_regular_and_never_hashed_or_read(
    backend: Backend,
    listed: Lister,
) -> None:
    special_files(backend)
    storage = backend.make()

    listing = listed(storage)

    assert listing is not None
    odd = ["python-3.14.0rc2-amd64.exe", "python-3.14.0rc2-arm64.exe", "python-3.14.0rc2.exe"]
    assert [p for p, e in listing.items() if not e.regular] == ["docs", *odd]
    for path in [*odd, "docs/passwd"]:
        with pytest.raises(StorageError, match="not a regular file"):
            storage.digest(RC2, [path])
        with pytest.raises(StorageError, match="not a regular file"):
            storage.read(RC2, path, 1 << 20)
    assert storage.digest(RC2, ["Python-3.14.0rc2.tgz"]) == {
        "Python-3.14.0rc2.tgz": hashlib.sha256(b"ok").hexdigest()
    }


def test_a_tree_1100_folders_deep_is_reported_at_its_top_folder_not_walked(
    backend: Backend, listed: Lister, request: pytest.FixtureRequest
) -> None:
    backend.write(TAG, "Python-3.14.0rc2.tgz", "ok")
    deep_tree_for(request, backend.staging / TAG / "deep", 1100)

    listing = listed(backend.make())

    assert listing is not None
    assert set(listing) == {"Python-3.14.0rc2.tgz", "deep/"}
    assert listing["deep/"].problem.startswith(f"more than {MAX_DEPTH} folders deep")


def test_past_the_entry_budget_the_listing_stops_and_says_so(
    backend: Backend, listed: Lister, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(30):
        backend.write(TAG, f"junk/{n:02d}.bin", "x")
    backend.write(TAG, "Python-3.14.0rc2.tgz", "ok")
    monkeypatch.setattr(walk, "MAX_ENTRIES", 20)

    listing = listed(backend.make())

    assert listing is not None and len(listing) <= 21
    assert listing[RELEASE_FOLDER].problem.startswith("holds more than 20 files and folders")
