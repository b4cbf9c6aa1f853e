"""More rules of the walk over untrusted trees (bot/storage/walk.py): each listing is asked
for no more entries than the budget has left (a hostile folder of millions of entries is
never read whole), a sub-folder that vanished or cannot be read costs only itself (every
other folder still pending is listed), and every reported folder's entry carries its own
path. The walk is written once for every backend, so a backend's ``listdir`` made of a dict
of folders shows it; the depth is also shown on real folders."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.storage import walk
from bot.storage.local import LocalStorage
from bot.storage.walk import Dirent, Walked

ROOT = "/staging/3.14.0rc2"
FILE = stat.S_IFREG | 0o644
FOLDER = stat.S_IFDIR | 0o755


class Tree:
    """A backend's ``listdir`` over a dict of folders (folder → names; a name ending in
    ``/`` is a sub-folder), which records each listing it was asked for, and raises for the
    folders given in ``fails``."""

    def __init__(self, folders: dict[str, list[str]], fails: dict[str, OSError] | None = None):
        self.folders = folders
        self.fails = fails or {}
        self.asked: list[tuple[str, int]] = []

    def listdir(self, folder: str, limit: int) -> list[Dirent]:
        self.asked.append((folder, limit))
        if folder in self.fails:
            raise self.fails[folder]
        names = self.folders[folder][:limit]
        return [Dirent(n.rstrip("/"), FOLDER if n.endswith("/") else FILE, 7, 1.5) for n in names]

    def walk(self, prefix: str = "") -> Walked:
        return walk.walk(
            self.listdir,
            ROOT,
            prefix,
            unreadable=(PermissionError,),
            reason=lambda e: e.strerror or str(e),
        )


def problems(walked: Walked) -> dict[str, tuple[str, str]]:
    """Each entry that is a problem: its key → (its own path, the problem)."""
    return {k: (e.path, e.problem) for k, e in walked.entries.items() if e.problem}


def test_each_listing_is_asked_for_no_more_entries_than_the_budget_has_left_plus_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(walk, "MAX_ENTRIES", 10)
    tree = Tree(
        {
            ROOT: ["a.txt", "b.txt", "amd64/"],
            f"{ROOT}/amd64": ["c.msi", "arm/"],
            f"{ROOT}/amd64/arm": ["d.msi"],
        }
    )

    walked = tree.walk()

    assert set(walked.entries) == {"a.txt", "b.txt", "amd64/c.msi", "amd64/arm/d.msi"}
    assert tree.asked == [(ROOT, 11), (f"{ROOT}/amd64", 8), (f"{ROOT}/amd64/arm", 6)]


def test_a_folder_with_more_entries_than_the_budget_is_read_no_further_than_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(walk, "MAX_ENTRIES", 3)
    tree = Tree({ROOT: ["sub/"], f"{ROOT}/sub": [f"{i}.txt" for i in range(1000)]})

    walked = tree.walk()

    assert walked.cut
    assert tree.asked == [(ROOT, 4), (f"{ROOT}/sub", 3)]


@pytest.mark.parametrize("order", [["amd64/", "docs/"], ["docs/", "amd64/"]])
def test_a_sub_folder_removed_since_its_parent_was_listed_costs_only_itself(
    order: list[str],
) -> None:
    tree = Tree(
        {ROOT: ["a.txt", *order], f"{ROOT}/docs": ["index.html"]},
        fails={f"{ROOT}/amd64": FileNotFoundError(2, "No such file or directory")},
    )

    walked = tree.walk()

    assert set(walked.entries) == {"a.txt", "docs/index.html"}
    assert not walked.cut


@pytest.mark.parametrize("order", [["amd64/", "docs/"], ["docs/", "amd64/"]])
def test_a_sub_folder_that_cannot_be_read_is_reported_under_its_path_and_the_rest_is_listed(
    order: list[str],
) -> None:
    tree = Tree(
        {ROOT: ["a.txt", *order], f"{ROOT}/docs": ["index.html"]},
        fails={f"{ROOT}/amd64": PermissionError(13, "Permission denied")},
    )

    walked = tree.walk()

    assert set(walked.entries) == {"a.txt", "amd64/", "docs/index.html"}
    assert problems(walked) == {
        "amd64/": ("amd64/", "a folder that cannot be read: Permission denied")
    }


def test_a_public_sub_folder_that_cannot_be_read_carries_its_path_under_the_public_folder() -> None:
    tree = Tree(
        {ROOT: ["html/"], f"{ROOT}/html": ["_static/"]},
        fails={f"{ROOT}/html/_static": PermissionError(13, "Permission denied")},
    )

    walked = tree.walk("doc/3.14.1")

    assert problems(walked) == {
        "doc/3.14.1/html/_static/": (
            "doc/3.14.1/html/_static/",
            "a folder that cannot be read: Permission denied",
        )
    }


DEEP = "more than 1 folders deep: nothing below that depth was listed; remove the deep folders"


def test_a_folder_past_the_depth_is_reported_by_an_entry_carrying_its_top_folders_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_DEPTH", 1)
    release = tmp_path / "staging" / "3.14.0rc2"
    (release / "amd64" / "debug" / "symbols").mkdir(parents=True)
    (release / "amd64" / "python.exe").write_text("exe")
    storage = LocalStorage(tmp_path / "staging", tmp_path / "public")

    listing = storage.list_staging(ReleaseTag.parse("3.14.0rc2"))

    assert listing is not None
    assert {k: (e.path, e.problem) for k, e in listing.items()} == {
        "amd64/python.exe": ("amd64/python.exe", ""),
        "amd64/": ("amd64/", DEEP),
    }


def test_a_public_folder_past_the_depth_carries_its_top_folders_path_under_the_public_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_DEPTH", 1)
    docs = tmp_path / "public" / "doc" / "3.14.1"
    (docs / "html" / "_static" / "css").mkdir(parents=True)
    (tmp_path / "staging").mkdir()
    storage = LocalStorage(tmp_path / "staging", tmp_path / "public")

    found = storage.list_public(["doc/3.14.1"])

    assert {k: (e.path, e.problem) for k, e in found.items()} == {
        "doc/3.14.1/html/": ("doc/3.14.1/html/", DEEP)
    }
