"""A file that replaces a live one (bot/storage/aside.py) whose public folder does not exist
yet: the folder is made as public folders are, and the bot's copy is renamed into it."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.storage.local import LocalStorage

TAG = ReleaseTag.parse("3.14.1")


def test_a_replacing_file_whose_public_folder_is_missing_gets_the_folder_made(
    tmp_path: Path,
) -> None:
    for name in ("staging", "public"):
        (tmp_path / name).mkdir()
    staged = tmp_path / "staging" / "3.14.1" / "index-windows.json"
    staged.parent.mkdir()
    staged.write_bytes(b"{}")
    target = "windows/index/index-windows.json"
    sha = hashlib.sha256(b"{}").hexdigest()
    plan = PublishPlan(TAG, (PlanFile(staged.name, target, "windows", 2, sha, "absent"),))
    storage = LocalStorage(tmp_path / "staging", tmp_path / "public")
    assert storage.freeze(plan) == []

    storage.replace_public(TAG, staged.name, target)

    live = tmp_path / "public" / target
    assert live.read_bytes() == b"{}"
    for folder in (live.parent, live.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755
