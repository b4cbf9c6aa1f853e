"""More rules of the freeze (bot/storage/freezer.py ``freeze``): a freeze resumed after the
confirmation (a restarted bot) keeps the copies it made and their record, so what an
uploader does to staging since changes nothing of the publish and nothing is copied again;
a new confirmation drops the release's old copies and copies every file anew, so its record
is of the originals as they are now, and the tidy after the publish removes them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs
from bot.storage.primitives import Copied, CopyJob

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
    (storage.work / "frozen" / "3.14.1" / "tree" / "3.14.1" / "Python-3.14.1.tgz").unlink()

    assert storage.freeze(PLAN, fresh=False) == []

    assert copied == ["Python-3.14.1.tgz", "python-3.14.1-amd64.exe", "Python-3.14.1.tgz"]
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
