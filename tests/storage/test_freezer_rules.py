"""The files the bot makes itself at the confirmation (the signatures of the confirmed
files) join its copies as the freeze makes them (bot/storage/freezer.py ``add_copies``):
inside its work folder only, read-only, landing only when their bytes are the planned ones,
and checked again, like every copy, before they become public."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import PublishStopped, StorageError
from bot.storage import freezer
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs
from bot.storage.primitives import Copied, CopyJob, Places, Stamp

TAG = ReleaseTag.parse("3.14.1")
TARBALL = b"the confirmed tarball"
SIGNATURE = b'{"signature": "made by the bot"}'


def planned(path: str, data: bytes) -> PlanFile:
    return PlanFile(path, f"3.14.1/{path}", "source", len(data), hashlib.sha256(data).hexdigest())


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    for name in ("staging", "public"):
        (tmp_path / name).mkdir()
    (tmp_path / "staging" / "3.14.1").mkdir()
    (tmp_path / "staging" / "3.14.1" / "Python-3.14.1.tgz").write_bytes(TARBALL)
    return LocalStorage(tmp_path / "staging", tmp_path / "public")


def frozen(storage: LocalStorage, signature: str) -> tuple[PublishPlan, PlanFile]:
    """The plan as confirmed (the tarball, copied) and the signature to add to it."""
    tarball = planned("Python-3.14.1.tgz", TARBALL)
    assert storage.freeze(PublishPlan(TAG, (tarball,))) == []
    sig = planned(signature, SIGNATURE)
    return PublishPlan(TAG, (tarball, sig)), sig


def copy_of(storage: LocalStorage, f: PlanFile) -> Path:
    return storage.work / "frozen" / "3.14.1" / "tree" / f.target


def test_a_signature_in_a_folder_no_copy_has_yet_gets_its_folder_as_public_folders_are(
    storage: LocalStorage,
) -> None:
    plan, sig = frozen(storage, "sigs/Python-3.14.1.tgz.sigstore")

    storage.write_frozen(plan, [(sig, SIGNATURE)])

    assert copy_of(storage, sig).read_bytes() == SIGNATURE
    assert stat.S_IMODE(copy_of(storage, sig).parent.stat().st_mode) == 0o755
    storage.promote(plan)
    assert (storage.public / sig.target).read_bytes() == SIGNATURE


def test_a_signature_whose_bytes_are_not_the_planned_ones_is_refused_by_name(
    storage: LocalStorage,
) -> None:
    plan, sig = frozen(storage, "Python-3.14.1.tgz.sigstore")

    with pytest.raises(StorageError) as refused:
        storage.write_frozen(plan, [(sig, b'{"signature": "something else!!"}')])

    message = str(refused.value)
    assert message.startswith("The bot's copy of Python-3.14.1.tgz.sigstore changed"), message
    assert not copy_of(storage, sig).exists()


def test_signatures_are_not_made_once_the_work_folder_is_gone(storage: LocalStorage) -> None:
    plan, sig = frozen(storage, "Python-3.14.1.tgz.sigstore")
    storage.work.rename(storage.work.parent / "moved-away")

    with pytest.raises(PublishStopped, match="is gone"):
        storage.write_frozen(plan, [(sig, SIGNATURE)])

    assert not storage.work.exists()  # not made again, empty, by the signing


def test_making_signatures_touches_nothing_outside_the_work_folder(
    storage: LocalStorage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "the process's current folder"
    elsewhere.mkdir()
    (elsewhere / ".made-0").write_text("someone's file")
    monkeypatch.chdir(elsewhere)
    plan, sig = frozen(storage, "Python-3.14.1.tgz.sigstore")

    storage.write_frozen(plan, [(sig, SIGNATURE)])

    assert (elsewhere / ".made-0").read_text() == "someone's file"
    assert copy_of(storage, sig).read_bytes() == SIGNATURE


def test_a_signature_copy_swapped_for_another_file_after_it_was_made_is_not_published(
    storage: LocalStorage, tmp_path: Path
) -> None:
    plan, sig = frozen(storage, "Python-3.14.1.tgz.sigstore")
    storage.write_frozen(plan, [(sig, SIGNATURE)])
    copy = copy_of(storage, sig)
    # Same size, mode and owner: only the file itself (its inode) tells it apart.
    other = tmp_path / "other"
    other.write_bytes(b"x" * len(SIGNATURE))
    os.chmod(other, 0o444)
    os.replace(other, copy)

    with pytest.raises(PublishStopped, match=r"Python-3\.14\.1\.tgz\.sigstore changed"):
        storage.promote(plan)

    assert storage.public.exists() and list(storage.public.iterdir()) == []


class NoCopyInodes(LocalFs):
    """A backend that cannot tell a copy's inode (as SFTP without exec)."""

    def copy(self, jobs: Sequence[CopyJob]) -> list[Copied]:
        return [replace(c, copy_ino=None) for c in super().copy(jobs)]


def test_a_signature_made_again_where_inodes_cannot_be_told_is_not_held_to_the_old_inode(
    storage: LocalStorage,
) -> None:
    plan, sig = frozen(storage, "Python-3.14.1.tgz.sigstore")
    storage.write_frozen(plan, [(sig, SIGNATURE)])
    places = Places(str(storage.staging), str(storage.public), str(storage.work))
    # Signed again (a retry) through a connection that could not tell the copy's inode.
    freezer.add_copies(NoCopyInodes(), places, plan, [(sig, SIGNATURE)])

    storage.promote(plan)

    assert (storage.public / sig.target).read_bytes() == SIGNATURE


# -- the tidy: staged originals removed once the release is public ---------------------------


def staged(storage: LocalStorage, path: str, data: bytes) -> PlanFile:
    (storage.staging / "3.14.1" / path).parent.mkdir(parents=True, exist_ok=True)
    (storage.staging / "3.14.1" / path).write_bytes(data)
    return planned(path, data)


def staged_names(storage: LocalStorage) -> set[str]:
    return {p.name for p in (storage.staging / "3.14.1").iterdir()}


def test_an_original_rewritten_with_the_same_bytes_after_the_copy_is_left_and_named(
    storage: LocalStorage,
) -> None:
    plan = PublishPlan(TAG, (staged(storage, "Python-3.14.1.tgz", TARBALL),))
    assert storage.freeze(plan) == []
    (storage.staging / "3.14.1" / "Python-3.14.1.tgz").write_bytes(TARBALL)  # a new ctime

    assert storage.tidy(plan) == ["Python-3.14.1.tgz"]
    assert staged_names(storage) == {"Python-3.14.1.tgz"}


def test_an_original_gone_already_does_not_stop_the_tidy_of_the_others(
    storage: LocalStorage,
) -> None:
    gone = staged(storage, "a.txt", b"a")
    plan = PublishPlan(TAG, (gone, planned("Python-3.14.1.tgz", TARBALL)))
    assert storage.freeze(plan) == []
    (storage.staging / "3.14.1" / "a.txt").unlink()

    assert storage.tidy(plan) == []
    assert not (storage.staging / "3.14.1").exists()


def test_a_staged_file_named_like_a_signature_the_bot_made_is_left_alone_unnamed(
    storage: LocalStorage,
) -> None:
    tarball = planned("Python-3.14.1.tgz", TARBALL)
    assert storage.freeze(PublishPlan(TAG, (tarball,))) == []
    sig = planned("Python-3.14.1.tgz.sigstore", SIGNATURE)
    plan = PublishPlan(TAG, (sig, tarball))  # the signature first: the tidy goes on past it
    storage.write_frozen(plan, [(sig, SIGNATURE)])
    staged(storage, sig.path, b"uploaded by someone")

    assert storage.tidy(plan) == []
    assert staged_names(storage) == {sig.path}


class NoStampIdentity(LocalFs):
    """A backend that tells a file's size and mtime but not its inode or ctime (as SFTP
    without exec): nothing says an original is the file the bot copied."""

    def copy(self, jobs: Sequence[CopyJob]) -> list[Copied]:
        return [replace(c, source=c.source and self._blur(c.source)) for c in super().copy(jobs)]

    def stamps(self, paths: Sequence[str]) -> dict[str, Stamp | None]:
        return {p: s and self._blur(s) for p, s in super().stamps(paths).items()}

    @staticmethod
    def _blur(stamp: Stamp) -> Stamp:
        return replace(stamp, ino=None, ctime_ns=None)


def test_without_inode_and_ctime_no_original_is_removed(
    storage: LocalStorage,
) -> None:
    plan = PublishPlan(
        TAG, (staged(storage, "Python-3.14.1.tgz", TARBALL), staged(storage, "b.txt", b"b1"))
    )
    fs, places = (
        NoStampIdentity(),
        Places(str(storage.staging), str(storage.public), str(storage.work)),
    )
    assert freezer.freeze(fs, places, plan, fresh=True) == []
    (storage.staging / "3.14.1" / "b.txt").write_bytes(b"b2")  # same size, other bytes

    # A hash would be of whatever the path leads to by then: only the stamp can say.
    assert freezer.tidy(fs, places, plan) == ["Python-3.14.1.tgz", "b.txt"]
    assert staged_names(storage) == {"Python-3.14.1.tgz", "b.txt"}


class UploaderRemovesFirst(LocalFs):
    """The uploader removes each staged original just before the bot does."""

    def remove_staged(
        self, root: str, files: Mapping[str, Stamp], folders: Mapping[str, str]
    ) -> dict[str, str]:
        for path in files:
            (Path(root) / path).unlink()
        return super().remove_staged(root, files, folders)


def test_an_original_its_uploader_removes_during_the_tidy_is_no_error(
    storage: LocalStorage,
) -> None:
    plan = PublishPlan(TAG, (staged(storage, "Python-3.14.1.tgz", TARBALL),))
    assert storage.freeze(plan) == []
    places = Places(str(storage.staging), str(storage.public), str(storage.work))

    assert freezer.tidy(UploaderRemovesFirst(), places, plan) == []
    assert not (storage.staging / "3.14.1").exists()


def test_the_tidy_removes_every_folder_it_left_empty_nested_or_side_by_side(
    storage: LocalStorage,
) -> None:
    files = [
        staged(storage, "docs/html/library/index.html", b"<html>"),
        staged(storage, "docs/html/whatsnew/index.html", b"<html>"),
        staged(storage, "windows/python.exe", b"MZ"),
    ]
    plan = PublishPlan(TAG, tuple(files))
    assert storage.freeze(plan) == []

    assert storage.tidy(plan) == []
    assert staged_names(storage) == {"Python-3.14.1.tgz"}  # not planned: it stays


def test_an_empty_folder_among_the_copies_is_not_made_public_with_them(
    storage: LocalStorage,
) -> None:
    plan = PublishPlan(TAG, (planned("Python-3.14.1.tgz", TARBALL),))
    assert storage.freeze(plan) == []
    (storage.work / "frozen" / "3.14.1" / "tree" / "3.14.1" / "empty").mkdir(mode=0o755)

    storage.promote(plan)

    assert {p.name for p in (storage.public / "3.14.1").iterdir()} == {"Python-3.14.1.tgz"}


def test_a_link_among_the_copies_is_not_made_public_with_them(storage: LocalStorage) -> None:
    plan = PublishPlan(TAG, (planned("Python-3.14.1.tgz", TARBALL),))
    assert storage.freeze(plan) == []
    tree = storage.work / "frozen" / "3.14.1" / "tree" / "3.14.1"
    (tree / "elsewhere").symlink_to("/etc")

    storage.promote(plan)

    assert {p.name for p in (storage.public / "3.14.1").iterdir()} == {"Python-3.14.1.tgz"}


# -- a freeze record read back: the stamps of the originals -------------------------------------


@pytest.mark.parametrize(
    ("saved", "stamp"),
    [
        ([7, 5, 1_000, 2_000], Stamp(7, 5, 1_000, 2_000)),
        ([None, 5, 1_000, None], Stamp(None, 5, 1_000, None)),  # a server without inodes
        (["7", 5, 1_000, "2000"], Stamp(None, 5, 1_000, None)),  # what is not a number: unknown
        ([7, 5, "1000", 2_000], None),  # size and mtime are what the tidy compares: no stamp
        ([7, "5", 1_000, 2_000], None),
        ([7, 5, 1_000], None),
        ({"size": 5}, None),
    ],
)
def test_a_saved_stamp_is_read_back_only_as_far_as_it_can_be_trusted(
    saved: object, stamp: Stamp | None
) -> None:
    assert Stamp.from_json(saved) == stamp
