"""The rules of the local-folders backend itself (bot/storage/local.py), called in-process:
how a staged file is opened (only a regular file, through no symlink, never a path with
``.``, never blocking), what a read refuses and says, how a write of the same bytes or onto
a folder ends, what ``list_public`` lists and refuses, what ``relbot check`` says of staging
and public, how the lock makes the work folder's parents, and the one sentence every failed
operation is turned into."""

from __future__ import annotations

import errno
import os
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.ports.lease import Holder
from bot.storage import aside, freezer, promotion, walk
from bot.storage.local import LocalStorage
from bot.storage.primitives import Places
from bot.storage.workarea import not_on_public_filesystem
from tests.mounts import tmpfs
from tests.storage.conftest import staging_and_public

TAG = "3.14.0"
T = ReleaseTag.parse(TAG)
PLAN = cast(PublishPlan, SimpleNamespace(tag=T))
FULL = OSError(errno.ENOSPC, "No space left on device")


def local(tmp_path: Path) -> LocalStorage:
    staging, public = staging_and_public(tmp_path)
    (staging / TAG).mkdir()
    return LocalStorage(staging, public)


class Hung(Exception):
    """The call blocked (opening a FIFO nobody writes to waits for a writer forever)."""


@contextmanager
def no_hang() -> Iterator[None]:
    """Turn a call blocked for seconds into a failure instead of a hung test run."""

    def hung(signum: int, frame: object) -> None:
        raise Hung

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def message(err: pytest.ExceptionInfo[StorageError]) -> str:
    return str(err.value)


# -- opening a staged file ---------------------------------------------------------------


def test_a_staged_symlink_is_not_a_regular_file(tmp_path: Path) -> None:
    storage = local(tmp_path)
    (storage.staging / TAG / "python.tgz").symlink_to("/etc/passwd")

    with pytest.raises(StorageError) as err:
        storage.digest(T, ["python.tgz"])

    where = storage.staging / TAG / "python.tgz"
    assert message(err) == f"Cannot read {where}: not a regular file."


def test_a_dot_in_a_staged_path_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    storage = local(tmp_path)
    (storage.staging / TAG / "python.tgz").write_bytes(b"tar")

    with pytest.raises(StorageError) as err:
        storage.digest(T, ["./python.tgz"])

    assert message(err) == f"'{TAG}/./python.tgz' is not a path inside {storage.staging}."


def test_a_staged_socket_is_refused_with_the_systems_reason(tmp_path: Path) -> None:
    storage = local(tmp_path)
    where = storage.staging / TAG / "python.tgz"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(where))

        with pytest.raises(StorageError) as err:
            storage.read(T, "python.tgz", 100)

    assert message(err) == f"Cannot read {where}: No such device or address."


def test_a_fifo_in_place_of_a_staged_folder_is_refused_without_waiting(tmp_path: Path) -> None:
    storage = local(tmp_path)
    os.mkfifo(storage.staging / TAG / "docs")

    with pytest.raises(StorageError) as err, no_hang():
        storage.digest(T, ["docs/index.html"])

    assert message(err).endswith(": not a regular file.")


def test_a_fifo_in_place_of_staging_is_refused_without_waiting(tmp_path: Path) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    os.mkfifo(staging)
    storage = LocalStorage(staging, public)

    with pytest.raises(StorageError) as err, no_hang():
        storage.digest(T, ["python.tgz"])

    assert message(err) == f"Cannot read {staging / TAG / 'python.tgz'}: not a regular file."


def test_a_staged_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    storage = local(tmp_path)
    os.mkfifo(storage.staging / TAG / "python.tgz")

    with pytest.raises(StorageError) as err, no_hang():
        storage.read(T, "python.tgz", 100)

    assert message(err).endswith(": not a regular file.")


# -- reading -----------------------------------------------------------------------------


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    storage = local(tmp_path)
    (storage.staging / TAG / "windows.json").write_bytes(b"1234")

    assert storage.read(T, "windows.json", 4) == b"1234"


def test_a_file_over_the_limit_is_refused_naming_it(tmp_path: Path) -> None:
    storage = local(tmp_path)
    (storage.staging / TAG / "windows.json").write_bytes(b"12345")

    with pytest.raises(StorageError) as err:
        storage.read(T, "windows.json", 4)

    where = storage.staging / TAG / "windows.json"
    assert message(err) == f"{where} is larger than 4 bytes."


def write_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Staged files open on a descriptor that fails when read (as a disk error would)."""
    import bot.storage.local as module

    def opened(root: Path, relative: str) -> int:
        return os.open(root / relative, os.O_WRONLY)

    monkeypatch.setattr(module, "_open_staged", opened)


def test_a_read_that_fails_names_the_file_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = local(tmp_path)
    (storage.staging / TAG / "windows.json").write_bytes(b"{}")
    write_only(monkeypatch)

    with pytest.raises(StorageError) as err:
        storage.read(T, "windows.json", 100)

    where = storage.staging / TAG / "windows.json"
    assert message(err) == f"Cannot read {where}: Bad file descriptor."


def test_a_digest_that_fails_names_the_file_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = local(tmp_path)
    (storage.staging / TAG / "python.tgz").write_bytes(b"tar")
    write_only(monkeypatch)

    with pytest.raises(StorageError) as err:
        storage.digest(T, ["python.tgz"])

    where = storage.staging / TAG / "python.tgz"
    assert message(err) == f"Cannot read {where}: Bad file descriptor."


# -- writing -----------------------------------------------------------------------------


def test_a_write_onto_a_folder_is_refused_not_taken_as_done(tmp_path: Path) -> None:
    storage = local(tmp_path)
    (storage.staging / TAG / "python.tgz.sig").mkdir()

    with pytest.raises(StorageError) as err:
        storage.write(T, "python.tgz.sig", b"sig")

    assert message(err) == (
        f"python.tgz.sig already exists in {storage.staging / TAG}; not overwritten."
    )


def test_a_write_outside_the_release_says_why(tmp_path: Path) -> None:
    storage = local(tmp_path)

    with pytest.raises(StorageError) as err:
        storage.write(T, "../evil", b"x")

    assert message(err) == f"'../evil' is not a path inside {storage.staging / TAG}."


def test_a_write_into_a_missing_release_names_the_file(tmp_path: Path) -> None:
    storage = local(tmp_path)

    with pytest.raises(StorageError) as err:
        storage.write(ReleaseTag.parse("3.14.1"), "python.tgz.sig", b"sig")

    target = storage.staging / "3.14.1" / "python.tgz.sig"
    assert message(err) == f"Cannot write {target}: No such file or directory."


def test_a_file_name_of_the_longest_length_is_written(tmp_path: Path) -> None:
    # Its temporary name beside it is the bot's own short one, not derived from the name.
    storage = local(tmp_path)
    name = "a" * 255

    storage.write(T, name, b"sig")

    assert (storage.staging / TAG / name).read_bytes() == b"sig"
    assert os.listdir(storage.staging / TAG) == [name]


def test_a_file_name_too_long_for_the_filesystem_says_why_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    storage = local(tmp_path)
    name = "a" * 256

    with pytest.raises(StorageError) as err:
        storage.write(T, name, b"sig")

    assert message(err) == f"Cannot write {storage.staging / TAG / name}: File name too long."
    assert os.listdir(storage.staging / TAG) == []


# -- list_public ---------------------------------------------------------------------------


def test_list_public_goes_on_past_a_missing_folder(tmp_path: Path) -> None:
    storage = local(tmp_path)
    (storage.public / "3.14.0").mkdir()
    (storage.public / "3.14.0" / "python.tgz").write_bytes(b"tar")

    found = storage.list_public(["doc/3.14.0", "3.14.0"])

    assert list(found) == ["3.14.0/python.tgz"]


def test_list_public_of_a_file_in_place_of_a_folder_says_why(tmp_path: Path) -> None:
    storage = local(tmp_path)
    (storage.public / "3.14.0").write_bytes(b"not a folder")

    with pytest.raises(StorageError) as err:
        storage.list_public(["3.14.0"])

    assert message(err) == f"Cannot list {storage.public / '3.14.0'}: Not a directory."


def test_list_public_refuses_a_folder_larger_than_it_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = local(tmp_path)
    (storage.public / "3.14.0").mkdir()
    for n in range(4):
        (storage.public / "3.14.0" / f"f{n}").write_bytes(b"x")
    monkeypatch.setattr(walk, "MAX_ENTRIES", 3)

    with pytest.raises(StorageError) as err:
        storage.list_public(["3.14.0"])

    assert message(err) == (
        f"{storage.public / '3.14.0'} holds more than 3 files and folders, more than the bot lists."
    )


# -- relbot check --------------------------------------------------------------------------


def test_check_names_both_missing_folders_with_the_fix(tmp_path: Path) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"

    problems = LocalStorage(staging, public).check()

    assert problems == [
        f"storage.staging: {staging} does not exist; create it (mkdir -p {staging}) or fix "
        "the path.",
        f"storage.public: {public} does not exist; create it (mkdir -p {public}) or fix the path.",
    ]


def test_check_names_both_files_that_are_not_folders(tmp_path: Path) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.write_bytes(b"")
    public.write_bytes(b"")

    problems = LocalStorage(staging, public).check()

    assert problems == [
        f"storage.staging: {staging} is not a folder; fix the path.",
        f"storage.public: {public} is not a folder; fix the path.",
    ]


def test_check_says_a_read_only_public_is_not_writable(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    with tmpfs(tmp_path / "public", "size=1m,ro") as public:
        problems = LocalStorage(staging, public).check()

    assert problems == [f"storage.public: {public} is not writable by this user."]


def test_check_says_a_work_folder_to_be_made_on_another_filesystem(tmp_path: Path) -> None:
    staging, public = staging_and_public(tmp_path)
    with tmpfs(tmp_path / "elsewhere") as elsewhere:
        work = elsewhere / "work"
        problems = LocalStorage(staging, public, work).check()

    assert problems == [not_on_public_filesystem(Places(str(staging), str(public), str(work)))]


def test_check_says_a_work_folder_that_is_another_filesystem(tmp_path: Path) -> None:
    staging, public = staging_and_public(tmp_path)
    with tmpfs(tmp_path / "work", "size=1m,mode=0700") as work:
        problems = LocalStorage(staging, public, work).check()

    assert problems == [not_on_public_filesystem(Places(str(staging), str(public), str(work)))]


# -- the lock ------------------------------------------------------------------------------


def test_the_lock_makes_the_missing_parents_of_the_work_folder(tmp_path: Path) -> None:
    staging, public = staging_and_public(tmp_path)
    work = tmp_path / "var" / "lib" / "relbot" / "work"
    storage = LocalStorage(staging, public, work)

    lease = storage.lock(Holder.this_process(tmp_path / "state.db", 30))
    try:
        assert work.is_dir()
    finally:
        lease.release()


def test_the_lock_says_when_the_work_folders_parents_cannot_be_made(tmp_path: Path) -> None:
    staging, public = staging_and_public(tmp_path)
    (tmp_path / "var").write_bytes(b"a file")
    storage = LocalStorage(staging, public, tmp_path / "var" / "relbot" / "work")

    with pytest.raises(StorageError) as err:
        storage.lock(Holder.this_process(tmp_path / "state.db", 30))

    assert message(err) == (
        f"Cannot take the storage lock: {tmp_path / 'var' / 'relbot'} Not a directory."
    )


# -- the one sentence of a failed operation ------------------------------------------------


def failing(monkeypatch: pytest.MonkeyPatch, module: object, name: str, err: OSError) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise err

    monkeypatch.setattr(module, name, fail)


@pytest.mark.parametrize(
    ("module", "name", "call", "what"),
    [
        (freezer, "freeze", lambda s: s.freeze(PLAN), f"copy the files of {TAG}"),
        (freezer, "add_copies", lambda s: s.write_frozen(PLAN, []), f"add to the copies of {TAG}"),
        (promotion, "promote", lambda s: s.promote(PLAN), f"publish {TAG}"),
        (freezer, "discard", lambda s: s.discard(T), f"drop the copies of {TAG}"),
        (freezer, "tidy", lambda s: s.tidy(PLAN), f"tidy staging of {TAG}"),
    ],
)
def test_a_failed_operation_is_one_sentence_saying_what_failed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    module: object,
    name: str,
    call: Callable[[LocalStorage], object],
    what: str,
) -> None:
    storage = local(tmp_path)
    failing(monkeypatch, module, name, FULL)

    with pytest.raises(StorageError) as err:
        call(storage)

    assert message(err) == f"Cannot {what}: No space left on device."


def test_a_failed_look_at_public_names_public(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = local(tmp_path)
    failing(monkeypatch, freezer, "targets_in_public", FULL)

    with pytest.raises(StorageError) as err:
        storage.in_public(PLAN)

    assert message(err) == f"Cannot look at {storage.public}: No space left on device."


def test_a_failed_operation_names_a_folder_as_it_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    public = tmp_path / "ftp:.python"
    public.mkdir()
    (tmp_path / "staging").mkdir()
    storage = LocalStorage(tmp_path / "staging", public)
    failing(monkeypatch, freezer, "targets_in_public", FULL)

    with pytest.raises(StorageError) as err:
        storage.in_public(PLAN)

    assert message(err) == f"Cannot look at {public}: No space left on device."


def test_a_failed_replace_names_the_file_it_failed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = local(tmp_path)
    live = storage.public / "3.14.0" / "windows.json"
    failing(monkeypatch, aside, "replace_public", OSError(errno.ENOSPC, "No space left", live))

    with pytest.raises(StorageError) as err:
        storage.replace_public(T, "windows.json", "3.14.0/windows.json")

    assert message(err) == (
        f"Cannot replace {storage.public / '3.14.0/windows.json'}: {live} No space left."
    )
