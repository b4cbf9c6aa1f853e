"""What ``relbot check`` says about the bot's work folder (bot/storage/workarea.py): a folder
that is not the bot's own, a parent that is missing, a parent others can write, another
filesystem than public's; each sentence names what is wrong and the fix."""

from __future__ import annotations

import os
from pathlib import Path

from bot.storage.local import LocalStorage
from bot.storage.primitives import Places
from bot.storage.workarea import not_on_public_filesystem


def storage(tmp_path: Path, work: Path) -> LocalStorage:
    for name in ("staging", "public"):
        (tmp_path / name).mkdir(exist_ok=True)
    return LocalStorage(tmp_path / "staging", tmp_path / "public", work)


def test_a_work_folder_that_is_not_the_bots_is_named_with_every_reason(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir(mode=0o755)
    os.chmod(work, 0o755)
    os.chown(work, 1, 1)

    problems = storage(tmp_path, work).check()

    assert problems == [
        f"storage.work: {work} is not the bot's own folder (it is owned by uid 1, not by the "
        f"bot (uid {os.getuid()}); its mode is 755, not 700); move it away and check what is "
        "in it (the bot makes its own, mode 700)."
    ]


def test_a_work_folder_whose_parent_is_missing_is_told_to_create_it_or_move_it(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "missing"

    problems = storage(tmp_path, parent / "work").check()

    assert problems == [
        f"storage.work: {parent} does not exist; create it (mkdir -p {parent}) or set "
        "[storage] work to a folder whose parent exists."
    ]


def test_a_parent_another_account_owns_and_all_can_write_is_named_with_both_reasons(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, 0o777)
    os.chown(parent, 1, 1)

    problems = storage(tmp_path, parent / "work").check()

    assert len(problems) == 1
    assert "(it belongs to uid 1; its mode 777 lets others write it);" in problems[0]
    assert problems[0].endswith(
        "or set [storage] work to a folder in a parent only the bot can write, on public's "
        "filesystem."
    )


def test_a_parent_owned_by_another_account_alone_is_named(tmp_path: Path) -> None:
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o755)
    os.chown(parent, 1, 1)

    problems = storage(tmp_path, parent / "work").check()

    assert len(problems) == 1 and "(it belongs to uid 1);" in problems[0]


def test_a_work_folder_on_another_filesystem_is_told_where_to_go() -> None:
    places = Places("/srv/staging", "/srv/ftp/python", "/var/relbot")

    sentence = not_on_public_filesystem(places)

    assert sentence == (
        "storage.work: the bot's work folder /var/relbot and public /srv/ftp/python are on "
        "different filesystems, so publishing cannot be one rename; set [storage] work to a "
        "folder on public's filesystem (the default, beside public, is on it unless public is "
        "a mount point of its own)."
    )
