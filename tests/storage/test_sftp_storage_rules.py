"""What an operator reads when the download server fails in the middle of an SFTP storage
operation (bot/storage/sftp.py): each sentence names what the bot was doing, and the lock
held by another bot names the server and folder. Against the real OpenSSH server on
loopback."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from bot.domain.plan import PlanFile
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError, StorageLocked
from bot.ports.lease import Holder
from bot.storage.sftp import Connection, SftpStorage
from bot.storage.sftp_fs import SftpFs
from tests.sshd import SshServer
from tests.storage.conftest import Backend, plan_for, sftp_storage, staged_release

TAG = "3.14.0rc2"
FILES = ["Python-3.14.0rc2.tgz", "python-3.14.0rc2-amd64.exe"]


class Dropping(SftpStorage):
    """Once ``dropping``, the connection is lost as each operation begins (the server
    restarted under it)."""

    dropping = False

    def _fs(self, conn: Connection) -> SftpFs:
        if self.dropping:
            conn.client.close()
        return super()._fs(conn)


@pytest.fixture
def team(tmp_path: Path) -> Backend:
    return staged_release(tmp_path, TAG, FILES)


def holder(pid: int, host: str) -> Holder:
    return replace(Holder.this_process(Path("/srv/relbot/state.db"), 30), pid=pid, host=host)


def signature(plan_file: PlanFile) -> tuple[PlanFile, bytes]:
    """A signature the bot made for a planned file, as it adds it to its copies."""
    data = b"a sigstore bundle"
    digest = hashlib.sha256(data).hexdigest()
    path, target = f"{plan_file.path}.sigstore", f"{plan_file.target}.sigstore"
    return PlanFile(path, target, "signature", len(data), digest), data


OPERATIONS: dict[str, tuple[Callable[[SftpStorage, Backend], object], Callable[[Backend], str]]] = {
    "write": (
        lambda s, b: s.write(ReleaseTag.parse(TAG), "a.sigstore", b"bundle"),
        lambda b: f"write {b.staging / TAG / 'a.sigstore'}",
    ),
    "list_public": (lambda s, b: s.list_public(["3.14.0"]), lambda b: f"list {b.public}"),
    "read_public": (
        lambda s, b: s.read_public("windows.json", 1000),
        lambda b: f"read windows.json in {b.public}",
    ),
    "read_aside": (
        lambda s, b: s.read_aside(ReleaseTag.parse(TAG), "windows.json", 1000),
        lambda b: "read the bot's copy of windows.json",
    ),
    "replace_public": (
        lambda s, b: s.replace_public(ReleaseTag.parse(TAG), "windows.json", "windows.json"),
        lambda b: f"replace windows.json in {b.public}",
    ),
    "write_frozen": (
        lambda s, b: s.write_frozen(plan := plan_for(b, TAG, FILES), [signature(plan.files[0])]),
        lambda b: f"add to the copies of {TAG}",
    ),
    "discard": (
        lambda s, b: s.discard(ReleaseTag.parse(TAG)),
        lambda b: f"drop the copies of {TAG}",
    ),
    "overlap_on_server": (
        lambda s, b: s.overlap_on_server(),
        lambda b: f"resolve {b.staging} and {b.public}",
    ),
    "lock": (
        lambda s, b: s.lock(holder(4242, "dl-bot-a")),
        lambda b: f"lock {b.work / 'lock'}",
    ),
}


@pytest.mark.parametrize("name", OPERATIONS)
def test_a_connection_lost_during_an_operation_names_what_the_bot_was_doing(
    name: str, sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    operation, what = OPERATIONS[name]
    storage = sftp_storage(sshd, team.staging, team.public, Dropping)
    assert isinstance(storage, Dropping)
    closing.append(storage)
    assert storage.freeze(plan_for(team, TAG, FILES)) == []  # the bot's copies exist
    storage.dropping = True

    with pytest.raises(StagingUnreachable) as lost:
        operation(storage, team)

    assert str(lost.value) == (
        f"Lost the connection to {storage.where} while trying to {what(team)}; "
        "it is re-established on the next try."
    )


def test_a_check_that_loses_the_connection_says_what_it_was_checking(
    sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    storage = sftp_storage(sshd, team.staging, team.public, Dropping)
    assert isinstance(storage, Dropping)
    closing.append(storage)
    storage.dropping = True

    assert storage.check() == [
        f"Lost the connection to {storage.where} while trying to check the storage folders; "
        "it is re-established on the next try."
    ]


def test_a_second_bot_is_told_which_server_and_work_folder_the_first_holds(
    sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    first, second = (sftp_storage(sshd, team.staging, team.public) for _ in range(2))
    closing.extend([first, second])
    lease = first.lock(holder(4242, "dl-bot-a"))
    try:
        with pytest.raises(StorageLocked) as refused:
            second.lock(holder(777, "dl-bot-b"))
    finally:
        lease.release()

    assert str(refused.value).startswith(
        f"Another relbot holds the storage {second.where}:{team.work}: "
    )


@pytest.mark.parametrize("name", ["staging", "public", "work"])
def test_a_folder_given_as_a_relative_path_is_refused_naming_its_setting(
    name: str, tmp_path: Path
) -> None:
    """On the server a relative path is relative to the login's home: never what was meant."""
    folders = {"staging": "/srv/staging", "public": "/srv/public", "work": "/srv/work"}
    folders[name] = "srv/" + name
    with pytest.raises(StorageError) as refused:
        SftpStorage(
            "127.0.0.1",
            22,
            "relbot",
            tmp_path / "key",
            tmp_path / "known_hosts",
            folders["staging"],
            folders["public"],
            work=folders["work"],
        )

    assert str(refused.value) == (
        f"storage.{name}: 'srv/{name}' must be an absolute path on the server."
    )
