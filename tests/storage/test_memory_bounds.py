"""Reads of what uploaders control are bounded: a huge staged file is refused by its size, never
read whole into the bot's memory, and a flooded folder is read no further than the listing's
budget.

The files are sparse (a size on disk of nothing), and the process's address space is capped
around the read, so a read that asks for the whole file fails at once with a MemoryError
instead of the refusal; without the cap it would take gigabytes or the machine's memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.files import RELEASE_FOLDER
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.storage import walk
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs
from tests.storage.conftest import address_space_capped, staging_and_public

TAG = "3.14.0"
T = ReleaseTag.parse(TAG)
HUGE = 64 << 30  # 64 GiB: more than the cap below lets the process take


def huge_file(path: Path) -> Path:
    with path.open("wb") as f:
        f.truncate(HUGE)
    return path


def staged(tmp_path: Path) -> LocalStorage:
    staging, public = staging_and_public(tmp_path)
    (staging / TAG).mkdir()
    return LocalStorage(staging, public)


def test_a_huge_staged_file_is_refused_by_its_size_not_read(tmp_path: Path) -> None:
    storage = staged(tmp_path)
    where = huge_file(storage.staging / TAG / "windows.json")

    with address_space_capped(), pytest.raises(StorageError) as err:
        storage.read(T, "windows.json", 1024)

    assert str(err.value) == f"{where} is larger than 1,024 bytes."


def test_a_huge_small_file_is_refused_by_its_size_not_read(tmp_path: Path) -> None:
    where = huge_file(tmp_path / "record.json")

    with address_space_capped(), pytest.raises(StorageError) as err:
        LocalFs().read_small(str(where), 1024)

    assert str(err.value) == f"{where} is larger than 1,024 bytes."


def test_a_write_onto_a_huge_file_compares_only_as_many_bytes_as_it_writes(
    tmp_path: Path,
) -> None:
    storage = staged(tmp_path)
    huge_file(storage.staging / TAG / "windows.json")

    with address_space_capped(), pytest.raises(StorageError) as err:
        storage.write(T, "windows.json", b"{}")

    where = storage.staging / TAG
    assert str(err.value) == f"windows.json already exists in {where}; not overwritten."


def test_a_flooded_folder_is_read_no_further_than_the_listings_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = staged(tmp_path)
    for n in range(40):
        (storage.staging / TAG / f"flood-{n}").write_bytes(b"")
    monkeypatch.setattr(walk, "MAX_ENTRIES", 5)
    drawn = []
    scandir = os.scandir

    class Counted:
        def __init__(self, folder: str) -> None:
            self.entries = scandir(folder)

        def __enter__(self) -> Iterator[os.DirEntry[str]]:
            for entry in self.entries:
                drawn.append(entry.name)
                yield entry

        def __exit__(self, *exc: object) -> None:
            self.entries.close()

    monkeypatch.setattr(os, "scandir", Counted)

    listing = storage.list_staging(T)

    assert listing is not None and "more than 5 files" in listing[RELEASE_FOLDER].problem
    assert len(drawn) == 6  # the budget and one more, to know the folder holds more
