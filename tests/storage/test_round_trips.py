"""What a release costs over SFTP, round trip by round trip: a scan, the bot's copies, the
promotion and the tidy, on a server that runs the bot's commands and on one that allows SFTP
alone. The figures are the storage's own request counter (what `bench/promotion_bench.py`
reports): a change here is a change in what each step costs on release day."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.storage.sftp import SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import Backend, plan_for, sftp_storage

TAG = "3.14.0"
FILES = ["Python-3.14.0.tgz", "python-3.14.0-amd64.exe", "docs/index.html", "docs/a/b.html"]


def cost(storage: SftpStorage, step: Callable[[], object]) -> dict[str, int]:
    before = Counter(storage.requests)
    step()
    return dict(Counter(storage.requests) - before)


def release(tmp_path: Path, *, public_folder: bool) -> Backend:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    if public_folder:  # the folder exists already (an earlier upload): files are linked in
        (public / TAG).mkdir()
    team = Backend("sftp", staging, public, lambda: None, lambda k: None)  # type: ignore[arg-type,return-value]
    for path in FILES:
        team.write(TAG, path, f"content of {path}")
    return team


@pytest.mark.parametrize("public_folder", [False, True], ids=["new-folder", "existing-folder"])
def test_with_exec(sshd: SshServer, tmp_path: Path, public_folder: bool) -> None:
    team = release(tmp_path, public_folder=public_folder)
    plan = plan_for(team, TAG, FILES)
    storage = sftp_storage(sshd, team.staging, team.public)
    tag = ReleaseTag.parse(TAG)
    try:
        steps = {
            "scan": cost(storage, lambda: (storage.list_staging(tag), storage.digest(tag, FILES))),
            "again": cost(storage, lambda: (storage.list_staging(tag), storage.digest(tag, FILES))),
            "freeze": cost(storage, lambda: storage.freeze(plan)),
            "promote": cost(storage, lambda: storage.promote(plan)),
            "tidy": cost(storage, lambda: storage.tidy(plan)),
        }
    finally:
        storage.close()
    assert steps["scan"] == {"connect": 1, "stat": 1, "listdir": 3, "exec": 2, "hash": 1}
    assert steps["again"] == {"stat": 1, "listdir": 3}  # a listing per folder, no hashing
    assert steps["freeze"] == {
        "stat": 20,
        "listdir": 5,
        "exec": 2,
        "mkdir": 9,
        "copy": 1,  # every copy in one command on the server
        "write": 1,  # the freeze record
    }
    if public_folder:  # docs/ renamed whole, the files linked into X.Y.Z/ in one command
        assert steps["promote"] == {
            "stat": 7,
            "listdir": 11,
            "exec": 3,
            "mkdir": 2,
            "read": 1,
            "rmdir": 2,
            "rename": 1,
        }
    else:  # docs/ and X.Y.Z/ each renamed whole
        assert steps["promote"] == {
            "stat": 6,
            "listdir": 12,
            "exec": 2,
            "mkdir": 1,
            "read": 1,
            "rmdir": 1,
            "rename": 2,
        }
    assert steps["tidy"] == {
        "stat": 7,
        "listdir": 5,
        "exec": 2,
        "read": 1,
        "rmdir": 3,
        "remove": 4,
    }


def test_without_exec(sftp_only_sshd: SshServer, tmp_path: Path) -> None:
    team = release(tmp_path, public_folder=False)
    plan = plan_for(team, TAG, FILES)
    storage = sftp_storage(sftp_only_sshd, team.staging, team.public)
    tag = ReleaseTag.parse(TAG)
    try:
        steps = {
            "scan": cost(storage, lambda: (storage.list_staging(tag), storage.digest(tag, FILES))),
            "again": cost(storage, lambda: (storage.list_staging(tag), storage.digest(tag, FILES))),
            "freeze": cost(storage, lambda: storage.freeze(plan)),
            "promote": cost(storage, lambda: storage.promote(plan)),
            "tidy": cost(storage, lambda: storage.tidy(plan)),
        }
    finally:
        storage.close()
    # Each file's bytes come through the bot: hashed by download, copied through the bot,
    # checked in public by download, and each original hashed again before its removal.
    assert steps["scan"] == {"connect": 1, "stat": 1, "listdir": 3, "exec": 1, "download": 4}
    assert steps["again"] == {"stat": 1, "listdir": 3}
    assert steps["freeze"] == {"stat": 24, "listdir": 5, "download": 4, "mkdir": 9, "write": 1}
    assert steps["promote"] == {
        "stat": 10,
        "listdir": 12,
        "download": 4,
        "mkdir": 1,
        "read": 1,
        "rmdir": 1,
        "rename": 2,
    }
    assert steps["tidy"] == {
        "stat": 11,
        "listdir": 6,
        "download": 4,
        "read": 1,
        "rmdir": 5,
        "remove": 5,
    }
