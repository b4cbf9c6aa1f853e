"""Hashing by download, on a server that allows SFTP and no commands (bot/storage/remote_hash.py,
``RemoteHasher._by_download``): what a file that is not a regular file, one swapped for a
folder after its lstat, or a missing one gives; the digest cached with the file's stamp, even
for an empty file of 1970; and a big file hashed as it arrives, never joined whole. Against
the real OpenSSH server on loopback (server paths are this machine's paths)."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import paramiko
import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.storage.remote_hash import _is_hex
from bot.storage.sftp import Connection, SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage

TAG = ReleaseTag.parse("3.14.0rc2")
TGZ = "Python-3.14.0rc2.tgz"


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """The release's staging folder (public beside it, empty)."""
    (tmp_path / "public").mkdir()
    folder = tmp_path / "staging" / str(TAG)
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def storage(sftp_only_sshd: SshServer, release: Path, tmp_path: Path) -> Iterator[SftpStorage]:
    made = sftp_storage(sftp_only_sshd, release.parent, tmp_path / "public")
    yield made
    made.close()


def test_a_staged_symbolic_link_is_not_hashed_through(storage: SftpStorage, release: Path) -> None:
    (release / "passwd.tgz").symlink_to("/etc/passwd")

    with pytest.raises(StorageError) as refused:
        storage.digest(TAG, ["passwd.tgz"])

    assert str(refused.value) == (
        f"Cannot hash {release / 'passwd.tgz'} on {storage.where}: not a regular file."
    )


def test_a_file_in_a_folder_swapped_for_a_link_is_not_hashed_through(
    storage: SftpStorage, release: Path, tmp_path: Path
) -> None:
    """The file itself is regular: the folder on its way leads elsewhere (never followed)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / TGZ).write_bytes(b"not the release's")
    (release / "sub").symlink_to(elsewhere)

    with pytest.raises(StorageError) as refused:
        storage.digest(TAG, [f"sub/{TGZ}"])

    assert str(refused.value) == (
        f"Cannot hash {release / 'sub' / TGZ} on {storage.where}: not a regular file."
    )
    assert storage.requests["download"] == 0


def test_a_file_swapped_for_a_folder_after_its_lstat_is_not_hashed(
    storage: SftpStorage, release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = release / TGZ
    staged.write_bytes(b"the source")

    def swap(conn: Connection) -> None:
        lstat: Callable[[str], paramiko.SFTPAttributes] = conn.sftp.lstat

        def then_swap(path: str) -> paramiko.SFTPAttributes:
            found = lstat(path)
            if path == str(staged):  # between the hasher's look and its open
                staged.unlink()
                staged.mkdir()
            return found

        monkeypatch.setattr(conn.sftp, "lstat", then_swap)

    storage._ssh.call("test", swap)

    with pytest.raises(StorageError) as refused:
        storage.digest(TAG, [TGZ])

    assert str(refused.value) == (f"Cannot hash {staged} on {storage.where}: not a regular file.")


def test_a_file_gone_before_its_hash_is_said_to_be_gone(
    storage: SftpStorage, release: Path
) -> None:
    with pytest.raises(StorageError) as refused:
        storage.digest(TAG, [TGZ])

    assert str(refused.value) == f"Cannot hash {release / TGZ} on {storage.where}: it is gone."


def test_an_empty_file_of_1970_is_downloaded_once_then_its_digest_comes_from_the_cache(
    storage: SftpStorage, release: Path
) -> None:
    staged = release / "empty.txt"
    staged.write_bytes(b"")
    os.utime(staged, (0, 0))
    assert storage.list_staging(TAG) is not None  # the stamps the cache is keyed by

    first = storage.digest(TAG, ["empty.txt"])
    again = storage.digest(TAG, ["empty.txt"])

    assert first == again == {"empty.txt": hashlib.sha256(b"").hexdigest()}
    assert storage.requests["download"] == 1


def test_a_big_file_is_hashed_as_it_arrives_never_joined_into_one_piece(
    storage: SftpStorage, release: Path
) -> None:
    """paramiko's prefetch may buffer up to the whole file when the hashing lags behind the
    network; reading it into one piece holds it twice over (the pieces and the joined
    whole)."""
    size = 48 << 20
    staged = release / TGZ
    with staged.open("wb") as f:
        f.truncate(size)
    storage.staged_tags()  # connected before measuring

    tracemalloc.start()
    try:
        digest = storage.digest(TAG, [TGZ])
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    with staged.open("rb") as f:
        expected = hashlib.file_digest(f, "sha256").hexdigest()
    assert digest == {TGZ: expected}
    assert peak < 1.5 * size, f"{peak / 2**20:.1f} MiB held to hash a {size >> 20} MiB file"


@pytest.mark.parametrize("server", ["sshd", "sftp_only_sshd"], ids=["exec", "sftp-only"])
def test_a_file_gone_from_a_listing_is_hashed_afresh_when_it_comes_back(
    server: str, request: pytest.FixtureRequest, release: Path, tmp_path: Path
) -> None:
    """A scan that saw the file gone forgets its digest: uploaded again with other bytes of
    the same size, its time set back (rsync -t, tar), it is not taken for the old one."""
    staged = release / TGZ
    staged.write_bytes(b"first build")
    stamp = staged.stat().st_mtime_ns
    storage = sftp_storage(request.getfixturevalue(server), release.parent, tmp_path / "public")
    try:
        storage.list_staging(TAG)
        assert storage.digest(TAG, [TGZ]) == {TGZ: hashlib.sha256(b"first build").hexdigest()}
        staged.unlink()
        assert TGZ not in (storage.list_staging(TAG) or {})
        staged.write_bytes(b"respun once")
        os.utime(staged, ns=(stamp, stamp))
        storage.list_staging(TAG)
        again = storage.digest(TAG, [TGZ])
    finally:
        storage.close()

    assert again == {TGZ: hashlib.sha256(b"respun once").hexdigest()}


# -- what a server's sha256sum line must look like ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "digest"),
    [
        (hashlib.sha256(b"x").hexdigest(), True),
        ("0123456789abcdef" * 4, True),
        ("0123456789ABCDEF" * 4, False),  # sha256sum prints lower case only
        ("X" * 64, False),
        ("g" * 64, False),
        ("a" * 63, False),
        ("a" * 65, False),
    ],
)
def test_only_64_lower_case_hex_digits_are_taken_for_a_digest(text: str, digest: bool) -> None:
    assert _is_hex(text) is digest
