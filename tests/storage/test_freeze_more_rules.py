"""More rules of the freeze (bot/storage/freezer.py ``freeze``): a freeze resumed after the
confirmation (a restarted bot) keeps the copies it made and their record, so what an
uploader does to staging since changes nothing of the publish and nothing is copied again;
a new confirmation drops the release's old copies and copies every file anew, so its record
is of the originals as they are now, and the tidy after the publish removes them. Every
file that differs from the plan is named; each copy's inode is recorded where the backend
tells it (so a copy swapped since is never published) and forgotten where it cannot."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import PublishStopped
from bot.storage import freezer
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs
from bot.storage.primitives import Copied, CopyJob, Places

TAG = ReleaseTag.parse("3.14.1")
TARBALL = b"the confirmed tarball"
INSTALLER = b"the confirmed installer"


def planned(path: str, data: bytes) -> PlanFile:
    return PlanFile(path, f"3.14.1/{path}", "source", len(data), hashlib.sha256(data).hexdigest())


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    (tmp_path / "staging" / "3.14.1").mkdir(parents=True)
    (tmp_path / "public").mkdir()
    (tmp_path / "staging" / "3.14.1" / "Python-3.14.1.tgz").write_bytes(TARBALL)
    (tmp_path / "staging" / "3.14.1" / "python-3.14.1-amd64.exe").write_bytes(INSTALLER)
    return LocalStorage(tmp_path / "staging", tmp_path / "public")


@pytest.fixture
def copied(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The staged paths the bot copies (and hashes), in order."""
    made: list[str] = []
    copy = LocalFs.copy

    def counting(self: LocalFs, jobs: Sequence[CopyJob]) -> list[Copied]:
        made.extend(job.source.rsplit("/", 1)[-1] for job in jobs)
        return copy(self, jobs)

    monkeypatch.setattr(LocalFs, "copy", counting)
    return made


def copy_of(storage: LocalStorage, name: str) -> Path:
    return storage.work / "frozen" / "3.14.1" / "tree" / "3.14.1" / name


PLAN = PublishPlan(
    TAG,
    (planned("Python-3.14.1.tgz", TARBALL), planned("python-3.14.1-amd64.exe", INSTALLER)),
)


def test_a_resumed_freeze_keeps_the_confirmed_copies_whatever_staging_holds_since(
    storage: LocalStorage, copied: list[str]
) -> None:
    assert storage.freeze(PLAN) == []
    staged = storage.staging / "3.14.1"
    (staged / "Python-3.14.1.tgz").write_bytes(b"an uploader's other tarball")

    assert storage.freeze(PLAN, fresh=False) == []  # the bot restarted mid-publish

    assert copied == ["Python-3.14.1.tgz", "python-3.14.1-amd64.exe"]  # none copied again
    storage.promote(PLAN)
    assert (storage.public / "3.14.1" / "Python-3.14.1.tgz").read_bytes() == TARBALL


def test_a_resumed_freeze_copies_only_the_file_whose_copy_is_gone(
    storage: LocalStorage, copied: list[str]
) -> None:
    assert storage.freeze(PLAN) == []
    copy_of(storage, "python-3.14.1-amd64.exe").unlink()  # the tarball's, before it, is kept

    assert storage.freeze(PLAN, fresh=False) == []

    assert copied == ["Python-3.14.1.tgz", "python-3.14.1-amd64.exe", "python-3.14.1-amd64.exe"]
    storage.promote(PLAN)
    assert storage.tidy(PLAN) == []  # both originals are the files the bot copied
    assert not (storage.staging / "3.14.1").exists()


def test_a_new_confirmation_copies_every_file_again_so_the_tidy_knows_the_originals_now(
    storage: LocalStorage, copied: list[str], tmp_path: Path
) -> None:
    assert storage.freeze(PLAN) == []
    # Between the two confirmations the uploader stages the same tarball again (a new file).
    again = tmp_path / "uploaded"
    again.write_bytes(TARBALL)
    again.replace(storage.staging / "3.14.1" / "Python-3.14.1.tgz")

    assert storage.freeze(PLAN) == []  # /publish again, confirmed again

    assert copied == ["Python-3.14.1.tgz", "python-3.14.1-amd64.exe"] * 2
    storage.promote(PLAN)
    assert storage.tidy(PLAN) == []  # the re-staged tarball is the one copied: removed
    assert not (storage.staging / "3.14.1").exists()


def test_every_file_that_differs_from_the_plan_is_named_not_only_the_first(
    storage: LocalStorage,
) -> None:
    staged = storage.staging / "3.14.1"
    (staged / "Python-3.14.1.tgz").write_bytes(b"another tarball, staged after the plan")
    (staged / "python-3.14.1-amd64.exe").unlink()

    problems = storage.freeze(PLAN)

    assert problems == ["Python-3.14.1.tgz changed", "python-3.14.1-amd64.exe is missing"]
    assert not copy_of(storage, "Python-3.14.1.tgz").exists()


def test_a_copy_swapped_for_another_file_after_the_freeze_is_not_published(
    storage: LocalStorage, tmp_path: Path
) -> None:
    assert storage.freeze(PLAN) == []
    # Same size, mode and owner: only the file itself (its inode) tells it apart.
    other = tmp_path / "other"
    other.write_bytes(b"x" * len(TARBALL))
    os.chmod(other, 0o444)
    os.replace(other, copy_of(storage, "Python-3.14.1.tgz"))

    with pytest.raises(PublishStopped, match=r"Python-3\.14\.1\.tgz changed"):
        storage.promote(PLAN)

    assert list(storage.public.iterdir()) == []


class NoCopyInodes(LocalFs):
    """A backend that cannot tell a copy's inode (as SFTP without exec)."""

    def copy(self, jobs: Sequence[CopyJob]) -> list[Copied]:
        return [replace(c, copy_ino=None) for c in super().copy(jobs)]


def test_a_copy_made_again_where_inodes_cannot_be_told_is_not_held_to_the_old_inode(
    storage: LocalStorage,
) -> None:
    assert storage.freeze(PLAN) == []
    # The copy goes, its inode kept in use elsewhere: the copy made again cannot get the
    # same number back (a freed one is often handed out again at once).
    copy_of(storage, "Python-3.14.1.tgz").rename(storage.work.parent / "kept-old-copy")
    places = Places(str(storage.staging), str(storage.public), str(storage.work))
    # Resumed through a connection that could not tell the new copy's inode.
    assert freezer.freeze(NoCopyInodes(), places, PLAN, fresh=False) == []

    storage.promote(PLAN)

    assert (storage.public / "3.14.1" / "Python-3.14.1.tgz").read_bytes() == TARBALL
