"""The budgets of a walk over untrusted trees (bot/storage/walk.py), at their edges: how deep
a walk goes, how many entries it lists, where a folder past the depth is reported (in staging
and in public), what an entry that is not a regular file carries. The walk is written once for
every backend, so the local one shows it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.domain.files import RELEASE_FOLDER
from bot.domain.tags import ReleaseTag
from bot.storage import walk
from bot.storage.local import LocalStorage
from tests.hostile_files import deep_tree_for

TAG = "3.14.0rc2"
RC2 = ReleaseTag.parse(TAG)


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    (tmp_path / "staging" / TAG).mkdir(parents=True)
    (tmp_path / "public").mkdir()
    return LocalStorage(tmp_path / "staging", tmp_path / "public")


def test_32_folders_below_the_release_folder_are_listed_and_the_33rd_is_not(
    storage: LocalStorage, request: pytest.FixtureRequest
) -> None:
    release = storage.staging / TAG
    deep_tree_for(request, release / "deep32", 31)  # deep32/ and 31 folders below it
    deep_tree_for(request, release / "deep33", 32)

    listing = storage.list_staging(RC2)

    assert listing is not None
    assert set(listing) == {"deep32/" + "a/" * 31 + "deepest.txt", "deep33/"}
    assert listing["deep33/"].problem == (
        "more than 32 folders deep: nothing below that depth was listed; remove the deep folders"
    )


def test_a_public_folder_past_the_depth_is_reported_at_its_top_folder_under_the_public_path(
    storage: LocalStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_DEPTH", 2)
    docs = storage.public / "doc" / "3.14.1"
    (docs / "html" / "_static" / "css").mkdir(parents=True)
    (docs / "html" / "_static" / "css" / "main.css").write_text("body {}")
    (docs / "html" / "_static" / "logo.png").write_text("png")

    found = storage.list_public(["doc/3.14.1"])

    assert set(found) == {"doc/3.14.1/html/_static/logo.png", "doc/3.14.1/html/"}
    assert found["doc/3.14.1/html/"].problem.startswith("more than 2 folders deep")
    assert not found["doc/3.14.1/html/"].regular


def test_exactly_the_entry_budget_is_listed_whole_and_one_more_is_cut(
    storage: LocalStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_ENTRIES", 5)
    release = storage.staging / TAG
    (release / "amd64").mkdir()
    for name in ("a.txt", "b.txt", "amd64/c.msi", "amd64/d.msi"):  # 5 with the folder
        (release / name).write_text(name)

    listing = storage.list_staging(RC2)

    assert listing is not None and set(listing) == {"a.txt", "b.txt", "amd64/c.msi", "amd64/d.msi"}
    (release / "amd64" / "e.msi").write_text("one more")
    listing = storage.list_staging(RC2)
    assert listing is not None and listing[RELEASE_FOLDER].problem.startswith(
        "holds more than 5 files and folders"
    )


def test_an_empty_release_folder_lists_nothing(storage: LocalStorage) -> None:
    assert storage.list_staging(RC2) == {}


def test_entries_carry_their_size_and_time_and_only_regular_files_their_links(
    storage: LocalStorage,
) -> None:
    release = storage.staging / TAG
    (release / "Python-3.14.0rc2.tgz").write_text("source")
    os.utime(release / "Python-3.14.0rc2.tgz", (1_700_000_000, 1_700_000_000.5))
    (release / "link.tgz").symlink_to("Python-3.14.0rc2.tgz")
    os.link(release / "link.tgz", release / "link2.tgz", follow_symlinks=False)

    listing = storage.list_staging(RC2)

    assert listing is not None
    tgz = listing["Python-3.14.0rc2.tgz"]
    assert (tgz.size, tgz.mtime, tgz.regular, tgz.links) == (6, 1_700_000_000.5, True, 1)
    for name in ("link.tgz", "link2.tgz"):  # one symbolic link with two names
        assert (listing[name].regular, listing[name].links) == (False, 1)
