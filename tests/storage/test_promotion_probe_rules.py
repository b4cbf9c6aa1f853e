"""Rules of the promotion's checks before anything moves (bot/storage/promotion.py): every
existing public folder that gets a new entry is tried for writing (a private probe folder
made and removed), so a folder the bot cannot write stops the publish with nothing public
and a sentence saying what to do; and a target that is already public must be the planned
file, else nothing more moves."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from bot.domain.plan import PublishPlan
from bot.errors import PromotionConflict, StorageError
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs, PublicMoves
from bot.storage.primitives import FILE_MODE
from tests.sshd import SshServer
from tests.storage.conftest import Backend, as_uploader, plan_for, publish
from tests.uploader import Uploader

TAG = "3.14.0rc2"
DOCS = ["docs/index.html", "docs/library.html"]
FILES = ["Python-3.14.0rc2.tgz", "python-3.14.0rc2-amd64.exe", "python-3.14.0rc2-arm64.exe"]
PROBE = ".relbot-probe-"


def stage(backend: Backend, paths: list[str]) -> None:
    for path in paths:
        backend.write(TAG, path, f"content of {path}")


def local(tmp_path: Path, cls: type[LocalStorage] = LocalStorage) -> Backend:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    return Backend("local", staging, public, lambda: cls(staging, public), None)  # type: ignore[arg-type]


class DiesAfterTheFirstLink(LocalStorage):
    def _link(self, source: Path, target: Path) -> None:
        super()._link(source, target)
        raise KeyboardInterrupt  # the process dies


def interrupted_after_the_first_link(tmp_path: Path) -> tuple[Backend, PublishPlan]:
    """A publish into an existing 3.14.0/ whose process died once the first file was linked."""
    backend = local(tmp_path, DiesAfterTheFirstLink)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    with pytest.raises(KeyboardInterrupt):
        publish(backend.make(), plan)
    return backend, plan


def record_hashing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the local filesystem hashes from now on, in order."""
    hashed: list[str] = []
    real_hash = LocalFs.hash

    def recording(fs: LocalFs, paths: list[str]) -> dict[str, str]:
        hashed.extend(paths)
        return real_hash(fs, paths)

    monkeypatch.setattr(LocalFs, "hash", recording)
    return hashed


def probes_left(public: Path) -> list[Path]:
    return list(public.rglob(f"{PROBE}*"))


# -- a public folder the bot's account cannot write (a real non-root account over SFTP) ------


def test_a_public_folder_the_bots_account_cannot_write_is_named_with_the_fix_and_nothing_moves(
    sshd: SshServer, uploader: Uploader, shared_root: Path
) -> None:
    # The bot logs in as a real non-root account: the kernel refuses it the folder that
    # root made for the release (3.14.0/ exists: its files would be linked one by one).
    bot = shared_root / "srv"
    staging, public, work = bot / "staging", bot / "public", bot / "work"
    for folder in (bot, staging, public, work):
        folder.mkdir()
    backend = Backend("sftp", staging, public, None, None)  # type: ignore[arg-type]
    stage(backend, DOCS + FILES)
    subprocess.run(["chown", "-R", f"{uploader.uid}:{uploader.gid}", str(bot)], check=True)
    work.chmod(0o700)
    (public / "3.14.0").mkdir(mode=0o755)  # root's: the bot's account may not write it
    plan = plan_for(backend, TAG, DOCS + FILES)
    storage = as_uploader(sshd, uploader, staging, public, work=str(work))
    try:
        assert storage.freeze(plan) == []
        with pytest.raises(StorageError) as refused:
            storage.promote(plan)
    finally:
        storage.close()

    assert str(refused.value) == (
        f"{public / '3.14.0'} cannot be written by the bot (Permission denied; give the bot's "
        "account write access to it); nothing was made public."
    )
    assert backend.public_files() == {}  # not even the docs, whose folder could be renamed
    assert probes_left(public) == []  # the probe in public/ (for doc/) was made and removed


# -- a public folder that cannot be written for another reason ---------------------------------


class PublicRefusesFolders(LocalStorage):
    """Public's filesystem refuses every new folder with ``error`` (full, or mounted
    read-only); the bot's work folder beside it is fine."""

    error = OSError(errno.ENOSPC, "No space left on device")

    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        storage = self

        class Fs(LocalFs):
            def mkdir(self, path: str, mode: int) -> None:
                if Path(path).is_relative_to(storage.public):
                    raise storage.error
                super().mkdir(path, mode)

        self._fs = Fs(PublicMoves(self._rename, self._link, self._replace))


@pytest.mark.parametrize(
    ("code", "reason"),
    [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")],
    ids=["full", "read-only"],
)
def test_a_public_folder_unwritable_for_another_reason_is_named_without_the_access_fix(
    tmp_path: Path, code: int, reason: str
) -> None:
    class Refusing(PublicRefusesFolders):
        error = OSError(code, reason)

    backend = local(tmp_path, Refusing)
    stage(backend, DOCS + FILES)

    with pytest.raises(StorageError) as refused:
        publish(backend.make(), plan_for(backend, TAG, DOCS + FILES))

    # Write access would not help: the sentence does not send the RM after it.
    assert str(refused.value) == (
        f"{backend.public} cannot be written by the bot ({reason}); nothing was made public."
    )
    assert backend.public_files() == {}


# -- the probe itself ---------------------------------------------------------------------------


class ProbesWatched(LocalStorage):
    """Records, for every probe folder, its permissions just before it is removed."""

    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        self.probes: dict[str, int] = {}
        seen = self.probes

        class Fs(LocalFs):
            def rmdir(self, path: str) -> None:
                if Path(path).name.startswith(PROBE):
                    seen[path] = stat.S_IMODE(os.lstat(path).st_mode)
                super().rmdir(path)

        self._fs = Fs(PublicMoves(self._rename, self._link, self._replace))


def test_the_probe_in_each_receiving_public_folder_is_private_and_removed(
    tmp_path: Path,
) -> None:
    backend = local(tmp_path, ProbesWatched)
    (backend.public / "3.14.0").mkdir()  # its files are linked one by one
    stage(backend, DOCS + FILES)
    storage = backend.make()
    assert isinstance(storage, ProbesWatched)

    report = publish(storage, plan_for(backend, TAG, DOCS + FILES))

    assert report.problems == ()
    # One probe in public/ (doc/ is missing: made there) and one in 3.14.0/, each a folder
    # only the bot's account may enter while it exists.
    assert {str(Path(p).parent): mode for p, mode in storage.probes.items()} == {
        str(backend.public): 0o700,
        str(backend.public / "3.14.0"): 0o700,
    }
    assert probes_left(backend.public) == []
    assert set(backend.public_files()) == {
        *(f"doc/{TAG}/{p.removeprefix('docs/')}" for p in DOCS),
        *(f"3.14.0/{f}" for f in FILES),
    }


# -- a target that is public already ------------------------------------------------------------


def test_a_target_public_as_a_folder_after_an_interrupted_promotion_stops_it_saying_files_moved(
    tmp_path: Path,
) -> None:
    backend, plan = interrupted_after_the_first_link(tmp_path)
    (backend.public / "3.14.0" / FILES[1]).mkdir()  # someone's folder at the second target

    with pytest.raises(PromotionConflict) as conflict:
        LocalStorage(backend.staging, backend.public).promote(plan)

    assert str(conflict.value) == (
        f"3.14.0/{FILES[1]} is already public and is not a regular file; nothing more was "
        "moved (remove or rename it first)."
    )
    assert conflict.value.target == f"3.14.0/{FILES[1]}"
    assert conflict.value.moved is True  # the first file was public, from the run that died
    assert set(backend.public_files()) == {f"3.14.0/{FILES[0]}"}


def test_a_promotion_run_again_after_it_finished_proves_its_files_without_hashing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process died after the last move, before the publish was journaled done: the
    # restart promotes again. Each public file is the bot's copy by the inode its record
    # keeps (the copies' other names are gone), so none is read again.
    backend = local(tmp_path)
    (backend.public / "3.14.0").mkdir()  # linked one by one: the copies' names are removed
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    publish(backend.make(), plan)
    hashed = record_hashing(monkeypatch)
    backend.make().promote(plan)

    assert hashed == []
    assert set(backend.public_files()) == {f"3.14.0/{name}" for name in FILES}


def test_a_public_file_like_the_bots_copy_in_all_but_its_bytes_is_a_conflict(
    tmp_path: Path,
) -> None:
    # Already public before the confirmation: a file of the bot's account, read-only, of the
    # planned size, yet another inode and other bytes. Only its content can tell, so it is
    # read, and nothing moves.
    backend = local(tmp_path)
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    planned = next(f for f in plan.files if f.target == f"3.14.0/{FILES[1]}")
    lookalike = backend.public / "3.14.0" / FILES[1]
    lookalike.parent.mkdir()
    lookalike.write_bytes(b"x" * planned.size)
    lookalike.chmod(FILE_MODE)
    storage = backend.make()
    assert storage.freeze(plan) == []

    with pytest.raises(PromotionConflict) as conflict:
        storage.promote(plan, public_before=[planned.target])

    assert str(conflict.value) == (
        f"3.14.0/{FILES[1]} is already public with different content; nothing more was "
        "moved (remove or rename one of them first)."
    )
    assert conflict.value.moved is False and conflict.value.target == planned.target
    assert set(backend.public_files()) == {f"3.14.0/{FILES[1]}"}


def test_the_bots_copy_made_writable_and_changed_once_public_is_read_and_refused(
    tmp_path: Path,
) -> None:
    # The same inode as the bot's copy, but no longer read-only: someone with root changed
    # it in place after it went public. A promotion run again must read it, not trust it.
    backend = local(tmp_path)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    publish(backend.make(), plan)
    changed = backend.public / "3.14.0" / FILES[0]
    changed.chmod(0o644)
    with changed.open("r+b") as f:
        f.write(b"X")

    with pytest.raises(PromotionConflict) as conflict:
        backend.make().promote(plan)

    assert str(conflict.value).startswith(f"3.14.0/{FILES[0]} is already public with different")


def test_a_resumed_promotion_proves_a_linked_file_by_its_copy_when_no_inode_was_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Copies frozen over a server that showed no inodes leave none in the record; promoted
    # where inodes show, a file linked before a crash is the bot's by its copy's inode.
    backend = local(tmp_path, DiesAfterTheFirstLink)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    dying = backend.make()
    assert isinstance(dying, LocalStorage)
    assert dying.freeze(plan) == []
    record = dying.work / "frozen" / TAG / "sources.json"
    data = json.loads(record.read_text())
    assert set(data["copies"]) == set(FILES)
    record.write_text(json.dumps({**data, "copies": {}}))
    with pytest.raises(KeyboardInterrupt):
        dying.promote(plan)
    hashed = record_hashing(monkeypatch)
    LocalStorage(backend.staging, backend.public).promote(plan)

    # Each public file is read once, after the moves (with no inode recorded, that is how
    # the bot's copies are proved); the one linked before the crash is not read before.
    public = [str(backend.public / "3.14.0" / name) for name in FILES]
    assert sorted(hashed) == sorted(public)
    assert set(backend.public_files()) == {f"3.14.0/{name}" for name in FILES}


def test_a_file_where_a_public_folder_should_be_is_named_and_nothing_moves(
    tmp_path: Path,
) -> None:
    backend = local(tmp_path)
    (backend.public / "3.14.0").write_text("not a folder")
    stage(backend, DOCS + FILES)
    plan = plan_for(backend, TAG, DOCS + FILES)
    storage = backend.make()
    assert storage.freeze(plan) == []

    with pytest.raises(StorageError) as refused:
        storage.promote(plan)

    assert str(refused.value) == (
        f"{backend.public / '3.14.0'} is in the way: it should be a folder of public files "
        "(move it away); nothing was made public."
    )
    assert set(backend.public_files()) == {"3.14.0"}  # the docs' folder was not renamed


def test_a_target_taken_by_other_bytes_after_an_interrupted_promotion_says_files_moved(
    tmp_path: Path,
) -> None:
    backend, plan = interrupted_after_the_first_link(tmp_path)
    (backend.public / "3.14.0" / FILES[1]).write_text("someone else's")

    with pytest.raises(PromotionConflict) as conflict:
        LocalStorage(backend.staging, backend.public).promote(plan)

    assert str(conflict.value).startswith(f"3.14.0/{FILES[1]} is already public with different")
    assert conflict.value.moved is True  # the first file was public, from the run that died
