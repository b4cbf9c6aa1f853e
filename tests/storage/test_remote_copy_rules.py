"""Rules of the bot's copies made on the server (bot/storage/remote_copy.py): one shell
command per batch of files, each batch bounded, every file's answer read from its own line.
Against a real OpenSSH server on loopback whose sessions run in a UTF-8 locale and have a
temporary folder of the test's own."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.errors import StorageError
from bot.storage.primitives import Copied, CopyJob, Stamp
from bot.storage.sftp import SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import on_fs, serve, sftp_storage
from tests.storage.test_sftp_fs_rules import Reply, garbled, untrusted_replies


@pytest.fixture(scope="module")
def server_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server sessions' TMPDIR: where the copy's shell keeps its per-batch outputs."""
    return tmp_path_factory.mktemp("server-tmp")


@pytest.fixture(scope="module")
def utf8_sshd(tmp_path_factory: pytest.TempPathFactory, server_tmp: Path) -> Iterator[SshServer]:
    yield from serve(
        tmp_path_factory.mktemp("sshd-utf8"), f"SetEnv LC_ALL=C.UTF-8 TMPDIR={server_tmp}"
    )


@pytest.fixture
def storage(utf8_sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]) -> SftpStorage:
    made = sftp_storage(utf8_sshd, tmp_path / "staging", tmp_path / "public")
    closing.append(made)
    return made


def padded(folder: Path, name: str, length: int) -> Path:
    """``folder/…/name``, exactly ``length`` characters long (folders of x's between)."""
    path = folder
    while (left := length - len(str(path / name))) > 0:
        assert left > 1
        path = path / ("x" * (left - 1 if left <= 201 else 199 if left == 202 else 200))
    path.mkdir(parents=True, exist_ok=True)
    assert len(str(path / name)) == length
    return path / name


def stamp_of(path: Path) -> Stamp:
    st = os.stat(path)
    return Stamp(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def staged(tmp_path: Path, name: str, content: bytes) -> tuple[Path, str]:
    source = tmp_path / "staging" / name
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_bytes(content)
    return source, hashlib.sha256(content).hexdigest()


def copy(storage: SftpStorage, jobs: list[CopyJob]) -> list[Copied]:
    return on_fs(storage, lambda fs: fs.copy(jobs))


def where(storage: SftpStorage) -> str:
    return storage.where  # "[127.0.0.1]:PORT", word for word in test_ssh_login_messages.py


# -- batches -------------------------------------------------------------------------------


@pytest.mark.parametrize(("files", "commands"), [(100, 2), (101, 3)])
def test_copies_of_more_files_than_one_command_holds_all_come_back_in_order(
    storage: SftpStorage, tmp_path: Path, files: int, commands: int
) -> None:
    """A job counts its two paths and 100 characters of its own, and a command holds half
    the argument limit (50,000): with 200 + 700 characters of paths, 50 files a command."""
    jobs, contents = [], []
    for n in range(files):
        name = f"python-3.14.0-{n:04}.zip"
        content = f"content of {name}".encode()
        source = padded(tmp_path / "staging", name, 200)
        source.write_bytes(content)
        target = padded(tmp_path / "work", name, 700)
        jobs.append(CopyJob(str(source), str(target), hashlib.sha256(content).hexdigest()))
        contents.append(content)
    on_fs(storage, lambda fs: None)
    before = storage._ssh.requests["copy"]

    copied = copy(storage, jobs)

    assert storage._ssh.requests["copy"] - before == commands
    assert copied == [
        Copied("", job.sha256, stamp_of(Path(job.source)), os.stat(job.target).st_ino)
        for job in jobs
    ]
    assert [Path(job.target).read_bytes() for job in jobs] == contents


# -- what one copy reports -------------------------------------------------------------------


def test_a_copy_stamps_its_original_to_the_nanosecond(storage: SftpStorage, tmp_path: Path) -> None:
    source, digest = staged(tmp_path, "Python-3.14.0.tgz", b"tarball")
    os.utime(source, ns=(1_796_293_461_000_000_001, 1_796_293_461_565_084_569))
    target = tmp_path / "work" / "Python-3.14.0.tgz"
    target.parent.mkdir()

    [copied] = copy(storage, [CopyJob(str(source), str(target), digest)])

    assert copied.source == stamp_of(source)
    assert copied.source.mtime_ns == 1_796_293_461_565_084_569
    assert copied.copy_ino == os.stat(target).st_ino
    assert target.read_bytes() == b"tarball"


def test_a_file_whose_bytes_are_not_the_confirmed_ones_is_changed_with_its_digest(
    storage: SftpStorage, tmp_path: Path
) -> None:
    source, confirmed = staged(tmp_path, "Python-3.14.0.tgz", b"confirmed")
    source.write_bytes(b"rewritten since")
    target = tmp_path / "work" / "Python-3.14.0.tgz"
    target.parent.mkdir()

    [copied] = copy(storage, [CopyJob(str(source), str(target), confirmed)])

    assert copied == Copied("changed", hashlib.sha256(b"rewritten since").hexdigest())
    assert list(target.parent.iterdir()) == []


def test_a_file_changed_after_its_copy_was_hashed_is_copied_but_not_stamped(
    storage: SftpStorage, tmp_path: Path
) -> None:
    """The stamps before and after must agree for the copy to vouch for its original: a
    rewrite after the copy was hashed (the server's second stat saw another size) leaves the copy
    without a stamp, so only a hash can say later the original is unchanged."""
    source, digest = staged(tmp_path, "Python-3.14.0.tgz", b"tarball")
    target = tmp_path / "work" / "Python-3.14.0.tgz"
    target.parent.mkdir()

    def touched_after(reply: Reply) -> Reply:
        status, out, err = reply
        head, after = out.rstrip(b"\n").rsplit(b" ", 1)
        ino, size, mtime, ctime = after.split(b"|")
        return status, head + b" " + b"|".join([ino, size + b"0", mtime, ctime]) + b"\n", err

    garbled(storage, "export LC_ALL=C", touched_after)

    [copied] = copy(storage, [CopyJob(str(source), str(target), digest)])

    assert copied == Copied("", digest, None, os.stat(target).st_ino)


def test_a_copy_that_cannot_be_written_stops_the_freeze_with_cps_words_in_english(
    storage: SftpStorage, tmp_path: Path
) -> None:
    """The server's sessions speak UTF-8 (cp would print the name's é as it is): the copy's
    shell sets the C locale, so cp's words are plain ASCII (the é escaped) on every server."""
    source, digest = staged(tmp_path, "Python-3.14.0.tgz", b"tarball")
    target = tmp_path / "no-such-folder-é" / "Python-3.14.0.tgz"

    with pytest.raises(StorageError) as stopped:
        copy(storage, [CopyJob(str(source), str(target), digest)])

    assert str(stopped.value) == (
        f"Cannot copy {source}: cp: cannot create regular file '{tmp_path}/no-such-folder-'"
        "$'\\303\\251''/Python-3.14.0.tgz.part': "
        "No such file or directory."
    )


@untrusted_replies("cp")
def test_copies_from_a_reply_that_cannot_be_trusted_stop_the_freeze(
    storage: SftpStorage, tmp_path: Path, change: object, why: str
) -> None:
    """Each answer is matched to its file by its line, and only a shell that finished says
    every copy was made as its line says."""
    jobs = []
    for name in ("a.tgz", "b.exe"):
        source, digest = staged(tmp_path, name, name.encode())
        (tmp_path / "work").mkdir(exist_ok=True)
        jobs.append(CopyJob(str(source), str(tmp_path / "work" / name), digest))
    garbled(storage, "export LC_ALL=C", change)  # type: ignore[arg-type]

    with pytest.raises(StorageError) as stopped:
        copy(storage, jobs)

    assert str(stopped.value) == f"Cannot copy files on {where(storage)}: {why}."


def test_the_copys_temporary_folder_is_removed_on_the_server(
    storage: SftpStorage, tmp_path: Path, server_tmp: Path
) -> None:
    jobs = []
    for name in ("a.tgz", "b.exe", "c.zip"):
        source, digest = staged(tmp_path, name, name.encode())
        (tmp_path / "work").mkdir(exist_ok=True)
        jobs.append(CopyJob(str(source), str(tmp_path / "work" / name), digest))

    assert [c.problem for c in copy(storage, jobs)] == ["", "", ""]
    assert list(server_tmp.iterdir()) == []
