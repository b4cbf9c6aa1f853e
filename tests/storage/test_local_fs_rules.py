"""The filesystem interface on this machine's folders (bot/storage/local_fs.py), called
in-process: a copy that cannot go through the kernel (another filesystem) is still the staged
bytes, whole, read-only, or no copy at all (a full disk leaves no ``.part`` and says so); what a
copy reports (its problem, its hash, the original's stamp only when it did not move); a hash,
a link, a listing, a pin, never through a symlink; small files the bot writes are its own
(mode 0600); why a small file cannot be read, in the operator's words."""

from __future__ import annotations

import errno
import hashlib
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.errors import StorageError
from bot.storage import local_fs
from bot.storage.local_fs import LocalFs
from bot.storage.primitives import FILE_MODE, Copied, CopyJob
from tests.mounts import tmpfs as mounted


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs (tests run as root): another filesystem than ``tmp_path``'s, so the
    kernel refuses to copy across (EXDEV) and the copy goes through the process."""
    with mounted(tmp_path / "tmpfs", "size=512k") as mount:
        yield mount


def test_a_copy_from_another_filesystem_is_the_staged_bytes_whole_and_read_only(
    tmp_path: Path, tmpfs: Path
) -> None:
    data = bytes(range(256)) * 1500  # more than one chunk of the copy through the process
    (tmpfs / "big.tar.gz").write_bytes(data[:400_000])
    (tmpfs / "empty.txt").write_bytes(b"")
    work = tmp_path / "work"
    work.mkdir()
    jobs = [
        CopyJob(str(tmpfs / "big.tar.gz"), str(work / "big.tar.gz"), sha(data[:400_000])),
        CopyJob(str(tmpfs / "empty.txt"), str(work / "empty.txt"), sha(b"")),
    ]
    results = LocalFs().copy(jobs)
    assert [r.problem for r in results] == ["", ""]
    assert (work / "big.tar.gz").read_bytes() == data[:400_000]
    assert (work / "empty.txt").read_bytes() == b""
    assert stat.S_IMODE((work / "big.tar.gz").stat().st_mode) == FILE_MODE
    assert sorted(os.listdir(work)) == ["big.tar.gz", "empty.txt"]


def test_a_copy_of_many_chunks_from_another_filesystem_is_whole(tmp_path: Path) -> None:
    with mounted(tmp_path / "src", "size=8m") as mount:
        data = os.urandom(3 * (1 << 20) + 12345)
        (mount / "big.bin").write_bytes(data)
        [result] = LocalFs().copy(
            [CopyJob(str(mount / "big.bin"), str(tmp_path / "big.bin"), sha(data))]
        )
    assert result.problem == ""
    assert result.sha256 == sha(data)
    assert (tmp_path / "big.bin").read_bytes() == data


def test_a_copy_onto_a_full_disk_fails_and_leaves_no_part(tmp_path: Path, tmpfs: Path) -> None:
    data = os.urandom(1 << 20)  # one chunk, twice what the small disk holds: a short write
    (tmp_path / "big.bin").write_bytes(data)
    job = CopyJob(str(tmp_path / "big.bin"), str(tmpfs / "big.bin"), sha(data))
    with pytest.raises(OSError) as caught:
        LocalFs().copy([job])
    assert caught.value.errno == errno.ENOSPC
    assert os.listdir(tmpfs) == []


def test_a_copy_into_a_missing_folder_says_so_as_the_filesystem_does(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"a")
    job = CopyJob(str(tmp_path / "a.txt"), str(tmp_path / "gone" / "a.txt"), sha(b"a"))
    with pytest.raises(FileNotFoundError):
        LocalFs().copy([job])


def test_a_copy_reports_no_problem_its_hash_and_the_originals_stamp(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"release")
    st = os.lstat(tmp_path / "a.txt")
    [result] = LocalFs().copy(
        [CopyJob(str(tmp_path / "a.txt"), str(tmp_path / "a.copy"), sha(b"release"))]
    )
    assert result == Copied(
        "",
        sha(b"release"),
        local_fs._stamp(st),
        os.lstat(tmp_path / "a.copy").st_ino,
    )


def test_a_copy_whose_bytes_are_not_the_expected_ones_says_changed_with_their_hash(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_bytes(b"swapped")
    [result] = LocalFs().copy(
        [CopyJob(str(tmp_path / "a.txt"), str(tmp_path / "a.copy"), sha(b"release"))]
    )
    assert result == Copied("changed", sha(b"swapped"))
    assert not (tmp_path / "a.copy").exists()


def test_an_original_that_moved_during_its_copy_gives_no_stamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = tmp_path / "a.txt"
    original.write_bytes(b"release")
    real = local_fs._sha256_nofollow

    def touching(path: str) -> str:
        os.utime(original, ns=(1, 1))  # the uploader touches it while the copy is hashed
        return real(path)

    monkeypatch.setattr(local_fs, "_sha256_nofollow", touching)
    [result] = LocalFs().copy([CopyJob(str(original), str(tmp_path / "a.copy"), sha(b"release"))])
    assert result.problem == ""
    assert result.source is None


def test_a_copy_being_written_is_readable_by_the_bot_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_bytes(b"embargoed")
    real = local_fs._clone_or_copy
    modes: list[int] = []

    def watching(source: int, out: int) -> None:
        modes.append(stat.S_IMODE(os.fstat(out).st_mode))  # the .part, as others could see it
        real(source, out)

    monkeypatch.setattr(local_fs, "_clone_or_copy", watching)
    [result] = LocalFs().copy(
        [CopyJob(str(tmp_path / "a.txt"), str(tmp_path / "a.copy"), sha(b"embargoed"))]
    )
    assert result.problem == ""
    assert modes == [0o600]


def test_a_fifo_is_not_copied_as_not_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    [result] = LocalFs().copy([CopyJob(str(tmp_path / "pipe"), str(tmp_path / "c"), sha(b""))])
    assert result == Copied("is not a regular file")
    assert os.listdir(tmp_path) == ["pipe"]


def test_a_socket_cannot_be_read_and_the_copy_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a socket's path must be short
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock")
        [result] = LocalFs().copy([CopyJob("sock", str(tmp_path / "c"), sha(b""))])
        with pytest.raises(StorageError) as caught:
            LocalFs().read_small("sock", 100)
    assert result == Copied("cannot be read (No such device or address)")
    assert str(caught.value) == "Cannot read sock: No such device or address."


def test_a_small_file_behind_a_symlink_is_not_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StorageError) as caught:
        LocalFs().read_small(str(tmp_path / "link"), 100)
    assert str(caught.value) == f"Cannot read {tmp_path / 'link'}: not a regular file."


def test_a_small_file_that_fails_on_read_says_the_systems_words() -> None:
    path = "/proc/self/mem"  # a regular file whose first page cannot be read: EIO
    with pytest.raises(StorageError) as caught:
        LocalFs().read_small(path, 10)
    assert str(caught.value) == f"Cannot read {path}: Input/output error."


def test_a_hash_never_follows_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError) as caught:
        LocalFs().hash([str(tmp_path / "link")])
    assert caught.value.errno == errno.ELOOP


def test_a_listing_shows_a_symlink_as_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x")
    (tmp_path / "sym").symlink_to(tmp_path / "a")
    found = LocalFs().listdir(str(tmp_path))
    assert found is not None
    assert stat.S_ISLNK(found["sym"].mode)


def test_stamps_are_of_regular_files_only(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x")
    (tmp_path / "sym").symlink_to(tmp_path / "a")
    (tmp_path / "dir").mkdir()
    paths = [str(tmp_path / n) for n in ("a", "sym", "dir", "gone")]
    found = LocalFs().stamps(paths)
    assert found[paths[0]] == local_fs._stamp(os.lstat(tmp_path / "a"))
    assert [found[p] for p in paths[1:]] == [None, None, None]


def test_rmdir_removes_an_empty_folder_and_leaves_a_full_one(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a").write_bytes(b"x")
    fs = LocalFs()
    fs.rmdir(str(tmp_path / "empty"))
    fs.rmdir(str(tmp_path / "full"))
    fs.rmdir(str(tmp_path / "gone"))
    assert os.listdir(tmp_path) == ["full"]
    assert os.listdir(tmp_path / "full") == ["a"]


def test_a_pin_is_of_a_real_folder_only(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_bytes(b"x")
    (tmp_path / "sym").symlink_to(tmp_path / "dir")
    fs = LocalFs()
    with pytest.raises(NotADirectoryError):
        fs.pin(str(tmp_path / "file"))
    with pytest.raises(NotADirectoryError):  # O_NOFOLLOW: a symlink is not the folder
        fs.pin(str(tmp_path / "sym"))
    assert fs.pin(str(tmp_path / "dir")) is True
    fs.unpin(str(tmp_path / "dir"))
    fs.unpin(str(tmp_path / "never pinned"))  # nothing to let go of


def test_small_files_the_bot_writes_are_its_own(tmp_path: Path) -> None:
    fs = LocalFs()
    fs.write_small(str(tmp_path / "state"), b"1")
    assert fs.create_small(str(tmp_path / "lock"), b"2") is True
    assert stat.S_IMODE(os.lstat(tmp_path / "state").st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(tmp_path / "lock").st_mode) == 0o600
