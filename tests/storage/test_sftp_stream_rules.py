"""Rules of the bot's copies over an SFTP server that allows no commands (ForceCommand
internal-sftp): each byte comes through the bot and goes back, hashed as it is written
(bot/storage/sftp_stream.py). What a confirmation's freeze says about a file that changed,
went missing or was swapped since the lstat, what is left in the bot's work folder, and the
stamp of each original that lets the tidy remove it once public. Against the real OpenSSH
server on loopback (server paths are this machine's paths)."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from unittest.mock import ANY

import paramiko
import pytest

from bot.errors import StorageError
from bot.storage.primitives import Copied, CopyJob, Stamp
from bot.storage.sftp import Connection, SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import (
    Backend,
    address_space_capped,
    on_fs,
    plan_for,
    publish,
    sftp_storage,
    staged_release,
)
from tests.uploader import Uploader

TAG = "3.14.0rc2"
FILES = ["Python-3.14.0rc2.tgz", "python-3.14.0rc2-amd64.exe", "python-3.14.0rc2-arm64.exe"]
TGZ = FILES[0]


@pytest.fixture
def team(tmp_path: Path) -> Backend:
    """Staging with the release's files, an empty public folder (only for ``plan_for`` and
    the paths: the storage is made by each test)."""
    return staged_release(tmp_path, TAG, FILES)


def work_files(backend: Backend) -> set[str]:
    """Every file in the bot's copies of the release (paths below its tree)."""
    tree = backend.work / "frozen" / TAG / "tree"
    return {str(p.relative_to(tree)) for p in tree.rglob("*") if not p.is_dir()}


class OnLstat(SftpStorage):
    """Runs ``then`` once, right after the first lstat of ``path``: between the copy's lstat
    of a staged original and its open (on loopback, the server's path is this machine's)."""

    path = ""
    then: Callable[[], None] = staticmethod(lambda: None)

    def _lstat(self, conn: Connection, path: str) -> paramiko.SFTPAttributes | None:
        found = super()._lstat(conn, path)
        if path == self.path:
            self.path = ""
            self.then()
        return found


def swapping(
    server: SshServer, backend: Backend, staged: str, then: Callable[[], None]
) -> SftpStorage:
    storage = sftp_storage(server, backend.staging, backend.public, OnLstat)
    assert isinstance(storage, OnLstat)
    storage.path, storage.then = str(backend.staging / TAG / staged), then
    return storage


# -- what the freeze says ---------------------------------------------------------------------


def test_without_exec_a_file_rewritten_since_the_confirmation_is_named_and_no_part_is_left(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    plan = plan_for(team, TAG, FILES)
    team.write(TAG, TGZ, "an upload after the confirmation")
    storage = sftp_storage(sftp_only_sshd, team.staging, team.public)
    closing.append(storage)

    assert storage.freeze(plan) == [f"{TGZ} changed"]

    # the other two are the bot's copies; of the changed file nothing, not even a .part
    assert work_files(team) == {f"3.14.0/{f}" for f in FILES[1:]}


def test_without_exec_a_file_removed_since_the_confirmation_is_named_missing(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    plan = plan_for(team, TAG, FILES)
    (team.staging / TAG / TGZ).unlink()
    storage = sftp_storage(sftp_only_sshd, team.staging, team.public)
    closing.append(storage)

    assert storage.freeze(plan) == [f"{TGZ} is missing"]
    assert work_files(team) == {f"3.14.0/{f}" for f in FILES[1:]}


def test_without_exec_a_file_removed_between_its_lstat_and_its_open_is_named_missing(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    plan = plan_for(team, TAG, FILES)
    storage = swapping(sftp_only_sshd, team, TGZ, (team.staging / TAG / TGZ).unlink)
    closing.append(storage)

    assert storage.freeze(plan) == [f"{TGZ} is missing"]
    assert {f"3.14.0/{TGZ}", f"3.14.0/{TGZ}.part"} & work_files(team) == set()  # nor a .part


def test_without_exec_a_symlink_in_staging_is_named_not_a_regular_file_and_never_read(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    plan = plan_for(team, TAG, FILES)
    staged = team.staging / TAG / TGZ
    elsewhere = team.staging / "same-bytes"
    elsewhere.write_bytes(staged.read_bytes())
    staged.unlink()
    staged.symlink_to(elsewhere)  # the same bytes, but not a file staging holds
    storage = sftp_storage(sftp_only_sshd, team.staging, team.public)
    closing.append(storage)

    assert storage.freeze(plan) == [f"{TGZ} is not a regular file"]
    assert {f"3.14.0/{TGZ}", f"3.14.0/{TGZ}.part"} & work_files(team) == set()  # nor a .part
    assert storage.requests["download"] == len(FILES) - 1  # the link was never opened


def test_without_exec_a_file_swapped_for_a_folder_after_its_lstat_is_not_a_regular_file(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    plan = plan_for(team, TAG, FILES)
    staged = team.staging / TAG / TGZ

    def swap() -> None:
        staged.unlink()
        staged.mkdir()  # the bot's own uid, like every file the test staged

    storage = swapping(sftp_only_sshd, team, TGZ, swap)
    closing.append(storage)

    assert storage.freeze(plan) == [f"{TGZ} is not a regular file"]
    assert {f"3.14.0/{TGZ}", f"3.14.0/{TGZ}.part"} & work_files(team) == set()  # nor a .part


def test_without_exec_an_uploaders_file_swapped_for_a_link_to_roots_file_is_refused(
    sftp_only_sshd: SshServer, team: Backend, uploader: Uploader, closing: list[SftpStorage]
) -> None:
    """The uploader's staged file becomes, between the lstat and the open, a symlink to a
    file of another account (root's, which the bot can read and the uploader cannot): the
    open follows it, and only the owner of what was opened tells it from the staged file."""
    plan = plan_for(team, TAG, FILES)
    for path in FILES:
        os.chown(team.staging / TAG / path, uploader.uid, uploader.gid)
    staged = team.staging / TAG / TGZ
    secret = team.staging.parent / "roots-own"
    secret.write_text("only root may read this")
    secret.chmod(0o600)

    def swap() -> None:
        staged.unlink()
        staged.symlink_to(secret)

    storage = swapping(sftp_only_sshd, team, TGZ, swap)
    closing.append(storage)

    assert storage.freeze(plan) == [f"{TGZ} is not a regular file"]
    assert {f"3.14.0/{TGZ}", f"3.14.0/{TGZ}.part"} & work_files(team) == set()  # nor a .part


# -- the tidy: without exec, staging is left as it is ---------------------------------------


def test_without_exec_the_tidy_leaves_staging_as_it_is_and_says_why(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    """SFTP alone removes by path, following every link of the path but the last: after
    the publish, the originals' folder swapped for a link to public would make each
    removal a public one. Without exec the tidy removes nothing in staging, and says why;
    the bot's copies go."""
    plan = plan_for(team, TAG, FILES)
    storage = sftp_storage(sftp_only_sshd, team.staging, team.public)
    closing.append(storage)
    assert publish(storage, plan).problems == ()
    staged = team.staged_files(TAG)

    with pytest.raises(StorageError, match="runs no commands for the bot, and SFTP alone"):
        storage.tidy(plan)

    assert team.staged_files(TAG) == staged
    assert not (team.work / "frozen" / TAG).exists()


# -- on the filesystem interface itself ----------------------------------------------------------


@pytest.fixture
def fs_storage(
    sftp_only_sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> SftpStorage:
    storage = sftp_storage(sftp_only_sshd, tmp_path / "staging", tmp_path / "public")
    closing.append(storage)
    return storage


def test_without_exec_a_changed_copy_says_the_digest_of_the_bytes_it_read(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    source, target = tmp_path / "original", tmp_path / "copy"
    source.write_text("what the uploader put there since")
    job = CopyJob(str(source), str(target), hashlib.sha256(b"the confirmed bytes").hexdigest())

    copied = on_fs(fs_storage, lambda fs: fs.copy([job]))

    read = hashlib.sha256(b"what the uploader put there since").hexdigest()
    assert copied == [Copied("changed", read)]
    assert sorted(os.listdir(tmp_path)) == ["original"]  # no copy, no .part


@pytest.mark.parametrize(
    ("content", "mtime"),
    [(b"12345", 1_700_000_000.75), (b"", 0)],
    ids=["a file", "empty, at the epoch"],
)
def test_without_exec_a_copy_stamps_its_original_as_the_tidy_will_stamp_it(
    fs_storage: SftpStorage, tmp_path: Path, content: bytes, mtime: float
) -> None:
    """Size and whole seconds (SFTP v3 has no more) as nanoseconds, no inode and no ctime;
    the same stamp ``stamps`` gives the unchanged original later."""
    source, target = tmp_path / "original", tmp_path / "copy"
    source.write_bytes(content)
    os.utime(source, (mtime, mtime))
    digest = hashlib.sha256(content).hexdigest()

    copied = on_fs(fs_storage, lambda fs: fs.copy([CopyJob(str(source), str(target), digest)]))
    later = on_fs(fs_storage, lambda fs: fs.stamps([str(source)]))

    stamp = Stamp(None, len(content), int(mtime) * 10**9, None)
    assert copied == [Copied("", digest, stamp, None)]
    assert later == {str(source): stamp}
    assert target.read_bytes() == content and target.stat().st_mode & 0o777 == 0o444


def test_without_exec_a_copy_never_holds_the_file_twice_in_memory(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    """Read in bounded pieces, not whole: a release's installers are hundreds of MB. (The
    read-ahead still buffers up to the whole file on a fast link: once, not twice.)"""
    size = 4 << 20
    source, target = tmp_path / "original", tmp_path / "copy"
    source.write_bytes(os.urandom(size))
    job = CopyJob(str(source), str(target), hashlib.sha256(source.read_bytes()).hexdigest())
    on_fs(fs_storage, lambda fs: fs.uid())  # connected before measuring

    tracemalloc.start()
    try:
        copied = on_fs(fs_storage, lambda fs: fs.copy([job]))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert copied == [Copied("", job.sha256, Stamp(None, size, ANY, None), None)]
    assert peak < 2 * size, f"{peak / 2**20:.1f} MiB held to copy a {size >> 20} MiB file"


# -- a small file read whole --------------------------------------------------------------------


def test_a_small_file_of_exactly_the_limit_is_read(fs_storage: SftpStorage, tmp_path: Path) -> None:
    (tmp_path / "record.json").write_bytes(b"1234")

    assert on_fs(fs_storage, lambda fs: fs.read_small(str(tmp_path / "record.json"), 4)) == b"1234"


def test_a_small_file_swapped_for_a_folder_after_its_lstat_is_not_read(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    where = team.staging / TAG / TGZ

    def swap() -> None:
        where.unlink()
        where.mkdir()

    storage = swapping(sftp_only_sshd, team, TGZ, swap)
    closing.append(storage)

    with pytest.raises(StorageError) as err:
        on_fs(storage, lambda fs: fs.read_small(str(where), 1024))

    assert str(err.value) == f"{where} on {storage.where} is not a regular file."


def test_a_huge_small_file_is_refused_by_its_size_not_downloaded(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    where = tmp_path / "record.json"
    with where.open("wb") as f:
        f.truncate(64 << 30)  # sparse: 64 GiB to a reader, nothing on disk
    on_fs(fs_storage, lambda fs: fs.uid())  # connected before the cap

    with address_space_capped(256 << 20), pytest.raises(StorageError) as err:
        on_fs(fs_storage, lambda fs: fs.read_small(str(where), 1024))

    assert str(err.value) == f"{where} on {fs_storage.where} is larger than 1,024 bytes."
