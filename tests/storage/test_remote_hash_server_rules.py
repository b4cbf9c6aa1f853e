"""Rules of hashing on the server (bot/storage/remote_hash.py): ``sha256sum`` between two
``stat``s, several files by parallel processes, commands of bounded length, and a reply read
only as far as it can be trusted. Against a real OpenSSH server on loopback whose sessions
have a temporary folder of the test's own."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.errors import StorageError
from bot.storage.sftp import SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import on_fs, serve, sftp_storage
from tests.storage.test_remote_copy_rules import padded
from tests.storage.test_sftp_fs_rules import Reply, garbled

HASHING = "{ odd=$(find"  # how the hashing command starts


@pytest.fixture(scope="module")
def server_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server sessions' TMPDIR: where parallel hashing keeps its outputs."""
    return tmp_path_factory.mktemp("server-tmp")


@pytest.fixture(scope="module")
def tmp_sshd(tmp_path_factory: pytest.TempPathFactory, server_tmp: Path) -> Iterator[SshServer]:
    yield from serve(tmp_path_factory.mktemp("sshd-tmp"), f"SetEnv TMPDIR={server_tmp}")


@pytest.fixture
def storage(tmp_sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]) -> SftpStorage:
    made = sftp_storage(tmp_sshd, tmp_path / "staging", tmp_path / "public")
    closing.append(made)
    return made


def files(tmp_path: Path, names: list[str]) -> list[str]:
    paths = []
    for name in names:
        (tmp_path / name).write_bytes(f"content of {name}".encode())
        paths.append(str(tmp_path / name))
    return paths


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def hashed(storage: SftpStorage, paths: list[str]) -> dict[str, str]:
    return on_fs(storage, lambda fs: fs.hash(paths))


def where(storage: SftpStorage) -> str:
    return storage.where  # "[127.0.0.1]:PORT", word for word in test_ssh_login_messages.py


@pytest.mark.parametrize(("length", "count", "commands"), [(150, 108, 2), (342, 144, 3)])
def test_digests_of_more_files_than_one_command_holds_all_come_back(
    storage: SftpStorage, tmp_path: Path, length: int, count: int, commands: int
) -> None:
    """A path counts three times its length (and 16 after it) against half the argument
    limit (50,000): 107 paths of 150 characters in the first command, 48 of 342."""
    paths = []
    for n in range(count):
        path = padded(tmp_path / "staging", f"python-{n:04}.zip", length)
        path.write_bytes(b"x" * n)
        paths.append(str(path))
    on_fs(storage, lambda fs: None)
    before = storage._ssh.requests["hash"]

    digests = hashed(storage, paths)

    assert storage._ssh.requests["hash"] - before == commands
    assert digests == {p: hashlib.sha256(b"x" * n).hexdigest() for n, p in enumerate(paths)}


@pytest.mark.parametrize("names", [["a.tgz"], ["a.tgz", "b.exe", "c.zip", "d.json", "e.msi"]])
def test_files_are_hashed_in_parallel_through_a_temporary_folder_that_is_removed(
    storage: SftpStorage, tmp_path: Path, server_tmp: Path, names: list[str]
) -> None:
    paths = files(tmp_path, names)

    assert hashed(storage, paths) == {p: digest(p) for p in paths}
    assert list(server_tmp.iterdir()) == []


def test_one_file_needs_no_temporary_folder_several_do(
    storage: SftpStorage, tmp_path: Path, server_tmp: Path
) -> None:
    """A lone file is hashed by one sha256sum straight to the reply; several by parallel
    processes whose outputs wait in a temporary folder: a server whose /tmp cannot be
    written still hashes one file, and says why it cannot hash several."""
    one, *more = files(tmp_path, ["a.tgz", "b.exe", "c.zip"])
    server_tmp.rename(tmp_path / "moved-away")
    try:
        assert hashed(storage, [one]) == {one: digest(one)}
        with pytest.raises(StorageError) as stopped:
            hashed(storage, [one, *more])
    finally:
        (tmp_path / "moved-away").rename(server_tmp)

    assert str(stopped.value) == (
        f"Cannot hash on {where(storage)}: mktemp: failed to create directory via template "
        f"'{server_tmp}/tmp.XXXXXXXXXX': No such file or directory."
    )


def records(change: Callable[[list[bytes]], None]) -> Callable[[Reply], Reply]:
    """A reply whose NUL-separated records (stamps, digests, stamps) pass through change."""

    def changed(reply: Reply) -> Reply:
        status, out, err = reply
        parts = out.split(b"\0")
        change(parts)
        return status, b"\0".join(parts), err

    return changed


def test_a_digest_that_is_not_hex_stops_the_hashing(storage: SftpStorage, tmp_path: Path) -> None:
    [path] = files(tmp_path, ["a.tgz"])

    def mangled(parts: list[bytes]) -> None:
        parts[1] = b"\xff" + parts[1][1:]  # the name after it is still the file's

    garbled(storage, HASHING, records(mangled))

    with pytest.raises(StorageError) as stopped:
        hashed(storage, [path])

    assert str(stopped.value) == f"Unexpected sha256sum output on {where(storage)} for {path}."


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda r: (1, r[1], b""), "no output"),
        (lambda r: (1, r[1], b"timeout: killed\nmore\n"), "timeout: killed"),
    ],
    ids=["silent", "with-a-reason"],
)
def test_digests_from_a_shell_that_failed_are_not_used(
    storage: SftpStorage, tmp_path: Path, change: Callable[[Reply], Reply], why: str
) -> None:
    paths = files(tmp_path, ["a.tgz", "b.exe"])
    garbled(storage, HASHING, change)

    with pytest.raises(StorageError) as stopped:
        hashed(storage, paths)

    assert str(stopped.value) == f"Cannot hash on {where(storage)}: {why}."


@pytest.mark.parametrize("changed", [False, True], ids=["unchanged", "changed-while-read"])
def test_a_digest_is_cached_only_when_the_file_did_not_change_while_it_was_read(
    storage: SftpStorage, tmp_path: Path, changed: bool
) -> None:
    [path] = files(tmp_path, ["a.tgz"])
    st = os.stat(path)
    if changed:  # the second stat saw another size: the bytes read may be of neither

        def grown(parts: list[bytes]) -> None:
            size, mtime = parts[2].split()
            parts[2] = str(int(size) + 1).encode() + b" " + mtime

        garbled(storage, HASHING, records(grown))

    assert hashed(storage, [path]) == {path: digest(path)}

    storage._hasher.remember(str(tmp_path), {path: (st.st_size, int(st.st_mtime))})
    assert storage._hasher.cached(path) == (None if changed else digest(path))
