"""What a staging listing says about a release folder storage could not take as a folder of
files (bot/storage/listing.py): one entry under the release folder's key, the reason in
words an uploader can act on. Local folders (the entries are shared by every backend): also
a staging path that is a file refused in one sentence, and a file removed while its folder
is listed hiding none of the others."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.domain.files import RELEASE_FOLDER
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable
from bot.storage import walk
from bot.storage.local import LocalStorage
from tests.test_hostile_staging import as_nobody, give_to_nobody

TAG = "3.14.0rc2"
RC2 = ReleaseTag.parse(TAG)


def test_a_release_folder_nobody_can_read_is_one_entry_saying_why(shared_root: Path) -> None:
    staging = shared_root / "staging"
    (staging / TAG).mkdir(parents=True)
    (staging / TAG / "Python-3.14.0rc2.tgz").write_bytes(b"x")
    give_to_nobody(shared_root)
    (staging / TAG).chmod(0)
    storage = LocalStorage(staging, shared_root / "public")

    def listing() -> object:
        found = storage.list_staging(RC2)
        assert found is not None
        return {key: [entry.path, entry.regular, entry.problem] for key, entry in found.items()}

    assert as_nobody(listing) == {
        RELEASE_FOLDER: [RELEASE_FOLDER, False, "cannot be read (Permission denied)"]
    }


def test_a_crowded_release_folder_is_one_entry_saying_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_ENTRIES", 2)
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / "staging" / TAG).mkdir(parents=True, exist_ok=True)
        (tmp_path / "staging" / TAG / name).write_text(name)

    listing = LocalStorage(tmp_path / "staging", tmp_path / "public").list_staging(RC2)

    assert listing is not None
    entry = listing[RELEASE_FOLDER]
    assert (entry.path, entry.regular) == (RELEASE_FOLDER, False)
    assert entry.problem == (
        "holds more than 2 files and folders, more than the bot lists; remove what does not "
        "belong to the release"
    )


def test_a_symlinked_release_folder_says_to_replace_the_link(tmp_path: Path) -> None:
    (tmp_path / "staging").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "staging" / TAG)

    listing = LocalStorage(tmp_path / "staging", tmp_path / "public").list_staging(RC2)

    assert listing is not None
    entry = listing[RELEASE_FOLDER]
    assert (entry.path, entry.regular) == (RELEASE_FOLDER, False)
    assert entry.problem == (
        f"is a symbolic link to {tmp_path / 'elsewhere'}; only a real folder is published, "
        "so replace the link with the folder itself"
    )


def test_a_name_with_a_control_character_is_one_entry_saying_to_rename_it(tmp_path: Path) -> None:
    (tmp_path / "staging" / TAG).mkdir(parents=True)
    (tmp_path / "staging" / TAG / "Python-3.14.0rc2\x1b.tgz").write_bytes(b"x")

    listing = LocalStorage(tmp_path / "staging", tmp_path / "public").list_staging(RC2)

    assert listing is not None
    [(key, entry)] = listing.items()
    assert key == entry.path and "\x1b" not in key  # shown escaped, never raw
    assert (entry.regular, entry.problem) == (
        False,
        "its name has control characters or bytes that are not UTF-8; rename it",
    )


def test_a_release_path_that_is_a_file_is_one_entry_saying_it_cannot_be_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / TAG).write_bytes(b"a file where the release's folder goes")

    listing = LocalStorage(tmp_path / "staging", tmp_path / "public").list_staging(RC2)

    assert listing is not None
    entry = listing[RELEASE_FOLDER]
    assert (entry.path, entry.regular) == (RELEASE_FOLDER, False)
    assert entry.problem == "cannot be read (Not a directory)"


def test_staging_that_is_a_file_is_refused_in_one_sentence(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    staging.write_bytes(b"a file where the staging folder goes")

    with pytest.raises(StagingUnreachable) as refused:
        LocalStorage(staging, tmp_path / "public").staged_tags()

    assert str(refused.value) == f"Cannot read staging {staging}: Not a directory."


def test_a_file_removed_while_its_folder_is_listed_hides_none_of_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = tmp_path / "staging" / TAG
    release.mkdir(parents=True)
    for name in ("a.txt", "b.txt", "c.txt"):
        (release / name).write_text(name)
    scandir = os.scandir
    removed: list[str] = []

    @contextmanager
    def first_entry_removed_once_read(path: str) -> Iterator[Iterator[os.DirEntry[str]]]:
        def entries() -> Iterator[os.DirEntry[str]]:
            with scandir(path) as found:
                for entry in found:
                    if path == str(release) and not removed:
                        os.unlink(entry.path)  # read with its folder, gone before its stat
                        removed.append(entry.name)
                    yield entry

        yield entries()

    monkeypatch.setattr(os, "scandir", first_entry_removed_once_read)
    listing = LocalStorage(tmp_path / "staging", tmp_path / "public").list_staging(RC2)

    assert listing is not None and len(removed) == 1
    assert set(listing) == {"a.txt", "b.txt", "c.txt"} - set(removed)
