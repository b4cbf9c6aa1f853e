"""What a release costs over SFTP, round trip by round trip: a scan, the bot's copies, the
promotion and the tidy, on a server that runs the bot's commands and on one that allows SFTP
alone. The figures are the storage's own request counter (what `bench/promotion_bench.py`
reports): a change here is a change in what each step costs on release day."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from tests.sshd import SshServer
from tests.storage.conftest import Backend, plan_for, sftp_storage, staged_release

TAG = "3.14.0"
FILES = ["Python-3.14.0.tgz", "python-3.14.0-amd64.exe", "docs/index.html", "docs/a/b.html"]
INDEX = "index-windows.json"


def costs(server: SshServer, team: Backend) -> dict[str, dict[str, int]]:
    """The round trips of each step of the release staged in ``team``, by kind."""
    plan = plan_for(team, TAG, FILES)
    storage = sftp_storage(server, team.staging, team.public)
    tag = ReleaseTag.parse(TAG)
    steps: dict[str, Callable[[], object]] = {
        "scan": lambda: (storage.list_staging(tag), storage.digest(tag, FILES)),
        "again": lambda: (storage.list_staging(tag), storage.digest(tag, FILES)),
        "freeze": lambda: storage.freeze(plan),
        "promote": lambda: storage.promote(plan),
        "tidy": lambda: storage.tidy(plan),
    }
    found = {}
    try:
        for name, step in steps.items():
            before = Counter(storage.requests)
            try:
                step()
            except StorageError as err:  # a tidy that leaves staging as it is
                found[f"{name} refused"] = {str(err): 1}
            found[name] = dict(Counter(storage.requests) - before)
    finally:
        storage.close()
    return found


@pytest.mark.parametrize("public_folder", [False, True], ids=["new-folder", "existing-folder"])
def test_with_exec(sshd: SshServer, tmp_path: Path, public_folder: bool) -> None:
    team = staged_release(tmp_path, TAG, FILES)
    if public_folder:  # the folder exists already (an earlier upload): files are linked in
        (team.public / TAG).mkdir()
    steps = costs(sshd, team)
    assert steps["scan"] == {"connect": 1, "stat": 1, "listdir": 3, "exec": 2, "hash": 1}
    assert steps["again"] == {"stat": 1, "listdir": 3}  # a listing per folder, no hashing
    assert steps["freeze"] == {
        "stat": 20,
        "listdir": 5,
        "exec": 3,  # the copies, and the identities of the folders they were copied from
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
    # every removal and the emptied folders in one command, the copies dropped by another
    assert steps["tidy"] == {"stat": 7, "listdir": 2, "exec": 2, "read": 1}


def test_without_exec(sftp_only_sshd: SshServer, tmp_path: Path) -> None:
    steps = costs(sftp_only_sshd, staged_release(tmp_path, TAG, FILES))
    # Each file's bytes come through the bot: hashed by download, copied through the bot,
    # checked in public by download; staging is left as it is (SFTP alone cannot remove a
    # file without following the links of its path), only the bot's copies are dropped.
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
    [refused] = steps["tidy refused"]
    assert "runs no commands for the bot" in refused
    assert steps["tidy"] == {"stat": 7, "listdir": 3, "read": 1, "rmdir": 2, "remove": 1}


@pytest.mark.parametrize("server", ["sshd", "sftp_only_sshd"], ids=["exec", "sftp-only"])
def test_the_live_index_is_replaced_by_one_rename(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The Windows install index lives at the top of public and is replaced, not added: the
    bot's copy is renamed over the live file, one request on either server, for each of two
    releases that update it on the same day."""
    team = staged_release(tmp_path, TAG, [INDEX])
    team.write("3.13.9", INDEX, "content of the index with 3.13.9")
    (team.public / INDEX).write_text("live")
    storage = sftp_storage(request.getfixturevalue(server), team.staging, team.public)
    spent = []
    try:
        live = b"live"
        for tag in (ReleaseTag.parse(TAG), ReleaseTag.parse("3.13.9")):
            staged = (team.staging / str(tag) / INDEX).read_bytes()
            digest, replaces = hashlib.sha256(staged).hexdigest(), hashlib.sha256(live).hexdigest()
            file = PlanFile(INDEX, INDEX, "windows", len(staged), digest, replaces)
            storage.freeze(PublishPlan(tag, (file,)))
            before = Counter(storage.requests)
            storage.replace_public(tag, INDEX, INDEX)
            spent.append((Counter(storage.requests) - before)["rename"])
            assert (team.public / INDEX).read_bytes() == staged
            live = staged
    finally:
        storage.close()
    assert spent == [1, 1]


def test_a_server_restarted_between_two_scans_costs_one_connection_more(
    own_sshd: SshServer, tmp_path: Path
) -> None:
    team = staged_release(tmp_path, TAG, FILES)
    storage = sftp_storage(own_sshd, team.staging, team.public)
    tag = ReleaseTag.parse(TAG)
    try:
        storage.list_staging(tag)
        storage.list_staging(tag)
        own_sshd.restart()  # the open connection dies with it
        storage.list_staging(tag)
    finally:
        storage.close()
    assert storage.requests["connect"] == 2
