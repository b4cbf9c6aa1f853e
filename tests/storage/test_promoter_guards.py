"""Guards of the promoter that a one-line change could remove unnoticed: a file appearing at
a target mid-publish, paths stepping out of a folder, a symlink named by the plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import PromotionConflict, PublishStopped, StorageError
from bot.storage.local import LocalStorage
from tests.storage.conftest import Backend, plan_for, publish

TAG = "3.14.0rc2"
RC2 = ReleaseTag.parse(TAG)
FILES = {"Python-3.14.0rc2.tgz": "tgz", "python-3.14.0rc2-amd64.exe": "exe", "b.txt": "b"}


class IntrudedLocal(LocalStorage):
    """Just before the second link, a different file appears at its target."""

    links = 0

    def _link(self, source: Path, target: Path) -> None:
        self.links += 1
        if self.links == 2:
            target.write_text("someone else's")
        super()._link(source, target)


def test_the_link_step_refuses_a_different_file_that_appeared_mid_publish(
    tmp_path: Path,
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    (public / "3.14.0").mkdir(parents=True)  # an existing folder: files are linked one by one
    for path, content in FILES.items():
        (staging / TAG).mkdir(parents=True, exist_ok=True)
        (staging / TAG / path).write_text(content)
    backend = Backend("local", staging, public, lambda: LocalStorage(staging, public), None)  # type: ignore[arg-type]
    plan = plan_for(backend, TAG, sorted(FILES))
    second = plan.files[1]

    with pytest.raises(PromotionConflict, match="appeared in public") as raised:
        publish(IntrudedLocal(staging, public), plan)

    assert raised.value.moved  # the first file was public already
    assert raised.value.target == second.target
    assert (public / second.target).read_text() == "someone else's"
    # The confirmed copy is kept in the bot's area for whoever sorts it out.
    assert backend.copy_of(TAG, second.target).read_text() == FILES[second.path]


@pytest.mark.parametrize("path", ["../outside.txt", "docs/../../outside.txt", "/etc/hostname"])
def test_local_storage_never_reads_outside_the_release_folder(tmp_path: Path, path: str) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    (staging / TAG).mkdir(parents=True)
    (staging / "outside.txt").write_text("not part of the release")
    storage = LocalStorage(staging, public)
    with pytest.raises(StorageError, match="is not a path inside"):
        storage.read(RC2, path, 1000)
    with pytest.raises(StorageError, match="is not a path inside"):
        storage.digest(RC2, [path])


def test_a_plan_stepping_outside_staging_or_public_moves_nothing(backend: Backend) -> None:
    backend.write(TAG, "Python-3.14.0rc2.tgz", "tgz")
    (backend.staging / "outside.txt").write_text("not part of the release")
    for path, target in (("../outside.txt", "3.14.0/x"), ("Python-3.14.0rc2.tgz", "../x")):
        plan = PublishPlan(RC2, (PlanFile(path, target, "source", 1, "0" * 64),))
        with pytest.raises(StorageError, match="is not a path inside"):
            backend.make().freeze(plan)
    bad_target = PublishPlan(RC2, (PlanFile("Python-3.14.0rc2.tgz", "../x", "source", 1, "0"),))
    with pytest.raises(StorageError, match="is not a path inside"):
        backend.make().promote(bad_target)
    assert backend.public_files() == {}
    assert (backend.staging / "outside.txt").exists()
    assert not (backend.public.parent / "x").exists()


def test_a_symlink_named_by_the_plan_is_refused_before_anything_moves(
    backend: Backend, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the public")
    backend.write(TAG, "Python-3.14.0rc2.tgz", "tgz")
    backend.write(TAG, "python-3.14.0rc2-amd64.exe", "exe")
    plan = plan_for(backend, TAG, ["Python-3.14.0rc2.tgz", "python-3.14.0rc2-amd64.exe"])
    # Swapped for a link to a file with the same content after the plan was made.
    exe = backend.staging / TAG / "python-3.14.0rc2-amd64.exe"
    secret.write_text("exe")
    exe.unlink()
    exe.symlink_to(secret)

    storage = backend.make()
    assert storage.freeze(plan) == ["python-3.14.0rc2-amd64.exe is not a regular file"]
    with pytest.raises(PublishStopped, match=r"copy of python-3\.14\.0rc2-amd64\.exe is missing"):
        storage.promote(plan)

    assert backend.public_files() == {}
    assert exe.is_symlink()


def test_a_work_folder_that_is_not_the_bots_is_refused_and_reported_by_check(
    backend: Backend,
) -> None:
    backend.write(TAG, "Python-3.14.0rc2.tgz", "tgz")
    plan = plan_for(backend, TAG, ["Python-3.14.0rc2.tgz"])
    # Someone who can write the work folder's parent put a folder of their own in its place.
    backend.work.mkdir(mode=0o777)
    backend.work.chmod(0o777)
    storage = backend.make()

    with pytest.raises(PublishStopped, match=r"cannot be trusted .*mode is 777"):
        storage.freeze(plan)

    assert backend.staged_files(TAG) == {"Python-3.14.0rc2.tgz": b"tgz"}
    assert list(backend.work.iterdir()) == []  # nothing was copied into it
    assert any("storage.work" in p and "not the bot's own" in p for p in storage.check())


def test_local_reads_fail_as_storage_errors_and_never_follow_a_symlink(tmp_path: Path) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    (staging / TAG).mkdir(parents=True)
    (tmp_path / "secret").write_text("not a bundle")
    (staging / TAG / "a.sigstore").symlink_to(tmp_path / "secret")
    storage = LocalStorage(staging, public)
    for path in ("missing.sigstore", "a.sigstore"):
        with pytest.raises(StorageError, match="Cannot read"):
            storage.read(RC2, path, 1000)
