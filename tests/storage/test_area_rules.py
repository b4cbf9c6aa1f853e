"""The bot trusts its areas only as they are (bot/storage/workarea.py): the promotion checks
the work folder and the frozen area each time and never makes them again, so an area taken
over by another account since the freeze, or gone, stops it in a sentence naming that
folder and nothing becomes public, and so does a look-alike put in its place (also after a
restart, in place of an area the new process only found) or a symlink; a folder the bot made
again itself (after an operator moved its work folder away) is trusted as made; a work folder
removed the moment it was made is named as gone; dropping copies makes no area; and a work
folder whose parent is missing is named with the fix."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bot.errors import StorageError
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs
from bot.storage.workarea import WorkAreaUntrusted
from tests.storage.test_freeze_more_rules import PLAN, storage

__all__ = ["storage"]


def test_a_frozen_area_taken_over_by_another_account_stops_the_promotion(
    storage: LocalStorage,
) -> None:
    assert storage.freeze(PLAN) == []
    area = storage.work / "frozen"
    os.chown(area, 1, 1)  # an uploader's account holds it now, open to all, copies unchanged
    area.chmod(0o777)

    with pytest.raises(WorkAreaUntrusted) as stopped:
        storage.promote(PLAN)

    assert str(stopped.value).startswith(
        f"The bot's work folder {area} cannot be trusted (it is owned by uid 1, not by the bot "
        f"(uid {os.getuid()}); its mode is 777, not 700): "
    )
    assert not (storage.public / "3.14.1").exists()


@pytest.mark.parametrize("gone", ["work", "frozen area"])
def test_a_bots_area_gone_since_the_freeze_is_named_and_never_made_again(
    storage: LocalStorage, gone: str
) -> None:
    assert storage.freeze(PLAN) == []
    folder = storage.work if gone == "work" else storage.work / "frozen"
    shutil.rmtree(folder)

    with pytest.raises(WorkAreaUntrusted) as stopped:
        storage.promote(PLAN)

    assert str(stopped.value) == (
        f"The bot's work folder {folder} is gone (moved or removed since the bot made it)."
    )
    assert not folder.exists()
    assert not (storage.public / "3.14.1").exists()


def test_dropping_copies_when_an_area_is_gone_names_it_and_makes_nothing(
    storage: LocalStorage,
) -> None:
    storage.work.mkdir(mode=0o700)  # the bot's work folder, its areas removed since

    with pytest.raises(WorkAreaUntrusted) as stopped:
        storage.discard(PLAN.tag)

    frozen = storage.work / "frozen"
    assert str(stopped.value) == (
        f"The bot's work folder {frozen} is gone (moved or removed since the bot made it)."
    )
    assert list(storage.work.iterdir()) == []


def test_a_work_folder_whose_parent_is_missing_is_named_with_the_fix(storage: LocalStorage) -> None:
    work = storage.work.parent / "missing" / "work"
    elsewhere = LocalStorage(storage.staging, storage.public, work)

    with pytest.raises(StorageError) as refused:
        elsewhere.freeze(PLAN)

    assert str(refused.value) == (
        f"storage.work: cannot create {work}: {work.parent} does not exist; create it or set "
        "[storage] work to a folder that can be made."
    )


@pytest.mark.parametrize("seen_by", ["the process that made it", "a restarted bot"])
def test_a_frozen_area_replaced_by_a_look_alike_since_the_freeze_stops_the_promotion(
    storage: LocalStorage, seen_by: str
) -> None:
    assert storage.freeze(PLAN) == []
    promoting = storage
    if seen_by == "a restarted bot":  # a new process that did not make the areas, only found them
        promoting = LocalStorage(storage.staging, storage.public)
        assert promoting.freeze(PLAN) == []  # the resumed freeze: the areas as they are now
    area = storage.work / "frozen"
    area.rename(storage.work / "moved-away")
    shutil.copytree(storage.work / "moved-away", area)  # the bot's account, mode, contents
    area.chmod(0o700)

    with pytest.raises(WorkAreaUntrusted) as stopped:
        promoting.promote(PLAN)

    assert str(stopped.value) == (
        f"The bot's work folder {area} cannot be trusted (it is not the folder the bot made: "
        "it was replaced since): someone who can write its parent folder must have replaced "
        "it; check it before removing it."
    )
    assert not (storage.public / "3.14.1").exists()


def test_a_work_folder_moved_away_while_the_bot_runs_is_made_again_by_the_next_freeze(
    storage: LocalStorage,
) -> None:
    assert storage.freeze(PLAN) == []
    # An operator moved it away by hand (kept, so the new folder cannot get its inode).
    storage.work.rename(storage.work.parent / "old-work")

    assert storage.freeze(PLAN) == []  # the bot made it again itself: trusted as made

    storage.promote(PLAN)
    assert (storage.public / "3.14.1" / "Python-3.14.1.tgz").is_file()


def test_a_work_folder_removed_the_moment_the_bot_made_it_is_named_not_a_crash(
    storage: LocalStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = LocalFs.mkdir

    def removed_at_once(self: LocalFs, path: str, mode: int) -> None:
        made(self, path, mode)
        os.rmdir(path)  # another account with the parent's write access, in that instant

    monkeypatch.setattr(LocalFs, "mkdir", removed_at_once)

    with pytest.raises(WorkAreaUntrusted) as stopped:
        storage.freeze(PLAN)

    assert str(stopped.value) == (
        f"The bot's work folder {storage.work} is gone (moved or removed since the bot made it)."
    )
    assert not storage.work.exists()


def test_a_symlink_in_place_of_an_area_is_named_as_not_a_real_folder(
    storage: LocalStorage, tmp_path: Path
) -> None:
    assert storage.freeze(PLAN) == []
    area = storage.work / "frozen"
    area.rename(tmp_path / "elsewhere")  # the bot's own folder, mode 700: only the link differs
    area.symlink_to(tmp_path / "elsewhere")

    with pytest.raises(WorkAreaUntrusted) as stopped:
        storage.promote(PLAN)

    assert str(stopped.value) == (
        f"The bot's work folder {area} cannot be trusted (it is not a real folder; its mode is "
        "777, not 700): someone who can write its parent folder must have replaced it; check it "
        "before removing it."
    )
    assert not (storage.public / "3.14.1").exists()
