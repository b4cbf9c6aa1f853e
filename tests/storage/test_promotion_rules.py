"""Rules of the promotion (bot/storage/promotion.py) that only show when something goes wrong
while the bot's copies become public: what the stop says, which files a way out leaves out,
and what counts as a file this promotion moved. Written once over the FileSystem primitives,
so the local backend shows them (over SFTP only where the backend cannot tell an inode)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from bot.errors import PromotionConflict, PublishStopped, StorageError
from bot.storage.local import LocalStorage
from bot.storage.sftp import Connection, SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import Backend, plan_for, publish, sftp_storage

TAG = "3.14.0rc2"
DOCS = [f"docs/page{n}.html" for n in range(7)]
FILES = ["Python-3.14.0rc2.tgz", "python-3.14.0rc2-amd64.exe", "python-3.14.0rc2-arm64.exe"]


def local(tmp_path: Path, cls: type[LocalStorage] = LocalStorage) -> Backend:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    return Backend("local", staging, public, lambda: cls(staging, public), None)  # type: ignore[arg-type]


def stage(backend: Backend, paths: list[str]) -> None:
    for path in paths:
        backend.write(TAG, path, f"content of {path}")


# -- a copy that changed after the confirmation ----------------------------------------------


def test_changed_copies_are_all_named_and_left_out_by_the_way_out(tmp_path: Path) -> None:
    backend = local(tmp_path)
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    storage = backend.make()
    assert storage.freeze(plan) == []
    for path in FILES[1:]:
        copy = backend.copy_of(TAG, f"3.14.0/{path}")
        copy.chmod(0o644)
        copy.write_text("tampered")  # only root could

    with pytest.raises(PublishStopped) as stopped:
        storage.promote(plan)

    said = str(stopped.value)
    assert f"(the bot's copy of {FILES[1]} changed, the bot's copy of {FILES[2]} changed)" in said
    assert said.endswith("; nothing more was made public.")
    assert set(stopped.value.files) == set(FILES[1:])  # what finishing without them leaves out
    assert backend.public_files() == {}


# -- a move that fails ------------------------------------------------------------------------


class RenamesFail(LocalStorage):
    """Folder renames fail from the ``fail_at``-th on with ``error``."""

    fail_at = 1
    error: OSError = OSError(errno.EIO, "Input/output error")
    renames = 0

    def _rename(self, source: Path, target: Path) -> None:
        self.renames += 1
        if self.renames >= self.fail_at:
            raise self.error
        super()._rename(source, target)


def test_a_first_move_failing_says_nothing_was_made_public(tmp_path: Path) -> None:
    backend = local(tmp_path, RenamesFail)
    stage(backend, FILES)

    with pytest.raises(StorageError) as failed:
        publish(backend.make(), plan_for(backend, TAG, FILES))

    assert str(failed.value) == (
        f"Cannot publish into {backend.public}: Input/output error; nothing was made public."
    )
    assert backend.public_files() == {}


def test_past_five_public_files_the_failure_names_five_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    class SecondRenameFails(RenamesFail):
        fail_at = 2
        error = OSError("the disk went away")  # no errno, no strerror: said as it is

    backend = local(tmp_path, SecondRenameFails)
    stage(backend, DOCS + FILES)
    plan = plan_for(backend, TAG, DOCS + FILES)

    with pytest.raises(StorageError) as failed:
        publish(backend.make(), plan)

    public = sorted(backend.public_files())
    assert public == [f"doc/{TAG}/page{n}.html" for n in range(7)]  # the docs' folder went
    said = str(failed.value)
    assert f"Cannot publish into {backend.public}: the disk went away; " in said
    assert f"public already: {', '.join(public[:5])} and 2 more (7 of 10 files)." in said


@pytest.mark.parametrize(
    ("docs", "more"), [(5, ""), (6, " and 1 more")], ids=["five-named", "five-named-one-counted"]
)
def test_up_to_five_public_files_are_named_and_the_rest_counted(
    tmp_path: Path, docs: int, more: str
) -> None:
    class SecondRenameFails(RenamesFail):
        fail_at = 2

    backend = local(tmp_path, SecondRenameFails)
    stage(backend, DOCS[:docs] + FILES)

    with pytest.raises(StorageError) as failed:
        publish(backend.make(), plan_for(backend, TAG, DOCS[:docs] + FILES))

    public = sorted(backend.public_files())
    assert len(public) == docs
    total = docs + len(FILES)
    assert str(failed.value).endswith(
        f"public already: {', '.join(public[:5])}{more} ({docs} of {total} files)."
    )


# -- files linked one by one into an existing folder ------------------------------------------


class Intruded(LocalStorage):
    """Just before the ``at``-th link, ``intrude(source, target)`` runs."""

    at = 2
    links = 0

    def intrude(self, source: Path, target: Path) -> None:
        raise NotImplementedError

    def _link(self, source: Path, target: Path) -> None:
        self.links += 1
        if self.links == self.at:
            self.intrude(source, target)
        super()._link(source, target)


def test_a_file_with_the_planned_content_that_appeared_mid_publish_is_not_counted_as_moved(
    tmp_path: Path,
) -> None:
    class SameContent(Intruded):
        def intrude(self, source: Path, target: Path) -> None:
            target.write_bytes(source.read_bytes())  # someone else's file, the same bytes

    backend = local(tmp_path, SameContent)
    (backend.public / "3.14.0").mkdir()  # an existing folder: files are linked one by one
    stage(backend, FILES)

    report = publish(backend.make(), plan_for(backend, TAG, FILES))

    assert report.moved == 2  # the second was made public by someone else
    # Not refused (the content is the plan's), but not the bot's file either: said so.
    assert report.problems == (f"3.14.0/{FILES[1]} is not the bot's copy",)


def test_a_copy_that_vanished_mid_publish_is_not_counted_and_is_reported_missing(
    tmp_path: Path,
) -> None:
    class CopyVanishes(Intruded):
        at = 1

        def intrude(self, source: Path, target: Path) -> None:
            (source.parent / FILES[2]).unlink()  # the last file's copy, before its turn

    backend = local(tmp_path, CopyVanishes)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    assert [f.path for f in plan.files] == FILES

    report = publish(backend.make(), plan)

    assert report.moved == 2
    assert report.problems == (f"3.14.0/{FILES[2]} is missing",)


def test_a_public_file_replaced_by_a_folder_before_the_check_is_reported_not_regular(
    tmp_path: Path,
) -> None:
    class ReplacedAfterItsLink(Intruded):
        at = 3  # just before the last link: the second file is public by then

        def intrude(self, source: Path, target: Path) -> None:
            second = target.parent / FILES[1]
            second.unlink()
            second.mkdir()  # not the bot's doing; the check after the moves must say so

    backend = local(tmp_path, ReplacedAfterItsLink)
    (backend.public / "3.14.0").mkdir()  # an existing folder: files are linked one by one
    stage(backend, FILES)

    report = publish(backend.make(), plan_for(backend, TAG, FILES))

    assert report.problems == (f"3.14.0/{FILES[1]} is not a regular file",)


class RefusedThenGone(Intruded):
    """The link is refused (a file appeared at the target), and that file is gone again
    when the promoter looks."""

    def intrude(self, source: Path, target: Path) -> None:
        target.write_text("someone else's")

    def _link(self, source: Path, target: Path) -> None:
        try:
            super()._link(source, target)
        except FileExistsError:
            target.unlink()
            raise


class FinishedByAnother(LocalStorage):
    """The second link is refused because the target is the bot's copy already and the
    copy's other name is gone: what a promotion that got further leaves behind."""

    links = 0

    def _link(self, source: Path, target: Path) -> None:
        self.links += 1
        super()._link(source, target)
        if self.links == 2:
            source.unlink()
            raise FileExistsError(errno.EEXIST, "File exists", str(source), None, str(target))


def test_a_file_that_appeared_and_vanished_mid_publish_stops_it_naming_what_is_public(
    tmp_path: Path,
) -> None:
    backend = local(tmp_path, RefusedThenGone)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)

    with pytest.raises(StorageError) as failed:
        publish(backend.make(), plan_for(backend, TAG, FILES))

    assert str(failed.value).startswith(f"Cannot publish into {backend.public / '3.14.0'}: ")
    assert str(failed.value).endswith(f"public already: 3.14.0/{FILES[0]} (1 of 3 files).")


def test_a_target_that_is_the_bots_copy_without_its_other_name_is_taken_by_content(
    tmp_path: Path,
) -> None:
    backend = local(tmp_path, FinishedByAnother)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)

    report = publish(backend.make(), plan_for(backend, TAG, FILES))

    assert report.moved == 2 and report.problems == ()
    assert set(backend.public_files()) == {f"3.14.0/{f}" for f in FILES}


class IntrudedSftp(SftpStorage):
    """Just before the second file is linked, a different file appears at its target."""

    def _link(self, conn: Connection, source: str, target: str) -> None:
        if target.endswith(FILES[1]):
            Path(target).write_text("someone else's")  # on loopback, the server's path
        super()._link(conn, source, target)


def test_over_sftp_without_inodes_a_different_file_that_appeared_mid_publish_is_refused(
    sftp_only_sshd: SshServer, tmp_path: Path
) -> None:
    backend = local(tmp_path)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    storage = sftp_storage(sftp_only_sshd, backend.staging, backend.public, IntrudedSftp)
    try:
        with pytest.raises(PromotionConflict, match="appeared in public with different content"):
            publish(storage, plan)
    finally:
        storage.close()

    assert (backend.public / "3.14.0" / FILES[1]).read_text() == "someone else's"


@pytest.mark.parametrize("frozen_over", ["shell", "sftp only"])
def test_a_publish_finishes_when_the_server_stops_or_starts_showing_inodes_after_the_freeze(
    sshd: SshServer, sftp_only_sshd: SshServer, tmp_path: Path, frozen_over: str
) -> None:
    """The server's config changed between the confirmation and the promotion (commands
    allowed, then SFTP only, or the other way): a copy whose inode was not recorded, or cannot
    be seen now, is proved by its hash, and the publish ends with no problem."""
    backend = local(tmp_path)
    (backend.public / "3.14.0").mkdir()  # files linked one by one into an existing folder
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    servers = [sshd, sftp_only_sshd] if frozen_over == "shell" else [sftp_only_sshd, sshd]
    freezing, promoting = (sftp_storage(s, backend.staging, backend.public) for s in servers)
    try:
        assert freezing.freeze(plan) == []
        report = promoting.promote(plan)
    finally:
        freezing.close()
        promoting.close()

    assert report.moved == len(FILES) and report.problems == ()
    assert set(backend.public_files()) == {f"3.14.0/{f}" for f in FILES}


def test_a_link_failing_names_the_folder_of_the_first_file_linked(tmp_path: Path) -> None:
    class LinksFail(LocalStorage):
        def _link(self, source: Path, target: Path) -> None:
            raise OSError(errno.EIO, "Input/output error")

    backend = local(tmp_path, LinksFail)
    (backend.public / "3.14.0").mkdir()  # existing: its files (and amd64/'s) are linked
    paths = ["Python-3.14.0rc2.tgz", "amd64/core.msi"]
    stage(backend, paths)

    with pytest.raises(StorageError) as failed:
        publish(backend.make(), plan_for(backend, TAG, paths))

    assert str(failed.value) == (
        f"Cannot publish into {backend.public / '3.14.0'}: Input/output error; "
        "nothing was made public."
    )


def test_a_conflict_at_the_first_link_after_a_folder_rename_says_files_were_public(
    tmp_path: Path,
) -> None:
    class FirstLinkIntruded(Intruded):
        at = 1

        def intrude(self, source: Path, target: Path) -> None:
            target.write_text("someone else's")

    backend = local(tmp_path, FirstLinkIntruded)
    (backend.public / "3.14.0").mkdir()
    paths = ["docs/page0.html", *FILES]
    stage(backend, paths)

    with pytest.raises(PromotionConflict) as conflict:
        publish(backend.make(), plan_for(backend, TAG, paths))

    assert f"doc/{TAG}/page0.html" in backend.public_files()  # renamed before the links
    assert conflict.value.moved


def test_a_conflict_in_a_resumed_promotion_says_files_were_public(tmp_path: Path) -> None:
    class CrashesAfterTheFirstLink(LocalStorage):
        def _link(self, source: Path, target: Path) -> None:
            super()._link(source, target)
            raise KeyboardInterrupt  # the process dies

    class SecondLinkIntruded(Intruded):
        at = 1  # the first link of the resumed promotion: the second file

        def intrude(self, source: Path, target: Path) -> None:
            target.write_text("someone else's")

    backend = local(tmp_path, CrashesAfterTheFirstLink)
    (backend.public / "3.14.0").mkdir()
    stage(backend, FILES)
    plan = plan_for(backend, TAG, FILES)
    with pytest.raises(KeyboardInterrupt):
        publish(backend.make(), plan)

    with pytest.raises(PromotionConflict) as conflict:
        SecondLinkIntruded(backend.staging, backend.public).promote(plan)

    assert conflict.value.target == f"3.14.0/{FILES[1]}"
    assert conflict.value.moved  # the first file was public, from the run that died
