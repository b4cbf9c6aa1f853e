"""``mkdir -p`` as the freeze and the promotion make folders (bot/storage/freezer.py
``make_folders``): only below the folder it stops at, whatever that folder is called; each
folder it makes gets exactly the mode asked; and a folder another promotion made in the
moment between looking and making is taken as made."""

from __future__ import annotations

from pathlib import Path

from bot.storage.freezer import make_folders
from bot.storage.local_fs import LocalFs
from bot.storage.primitives import Entry


def test_folders_are_made_below_the_stop_folder_each_with_the_mode_asked(tmp_path: Path) -> None:
    stop = tmp_path / "downloadsX"  # a name ending in a letter the path is trimmed of: "/"
    stop.mkdir()

    make_folders(LocalFs(), str(stop / "3.14.1" / "amd64"), str(stop), 0o755)

    made = [stop / "3.14.1", stop / "3.14.1" / "amd64"]
    assert [p.is_dir() and oct(p.stat().st_mode & 0o777) for p in made] == ["0o755"] * 2


def test_nothing_is_made_outside_the_stop_folder(tmp_path: Path) -> None:
    (tmp_path / "public").mkdir()

    make_folders(LocalFs(), str(tmp_path / "elsewhere" / "3.14.1"), str(tmp_path / "public"), 0o755)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["public"]


class MadeMeanwhile(LocalFs):
    """Another promotion makes the folder between this one's look and its mkdir."""

    def lstat(self, path: str) -> Entry | None:
        entry = super().lstat(path)
        if path.endswith("/3.14.1") and entry is None:
            Path(path).mkdir(mode=0o755)
            return None  # as this promotion saw it a moment ago
        return entry


def test_a_folder_made_meanwhile_by_another_promotion_is_taken_as_made(tmp_path: Path) -> None:
    stop = tmp_path / "public"
    stop.mkdir()

    make_folders(MadeMeanwhile(), str(stop / "3.14.1" / "amd64"), str(stop), 0o755)

    assert (stop / "3.14.1" / "amd64").is_dir()
