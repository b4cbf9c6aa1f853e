"""What `relbot check` says about storage over SFTP (bot/storage/sftp_check.py), word for
word, against the real sshd on loopback: staging or public that cannot be read, is missing or
is not a folder; both resolved by the server to one folder; a server without exec; folders
the bot's account cannot write; a group it is not in, or has among group names that are not
UTF-8; a work folder on another filesystem; a server whose folders cannot be inspected. Where
a non-root SSH user matters, the bot logs in as the real uploader account (tests/uploader.py)."""

from __future__ import annotations

import grp
import os
import subprocess
from pathlib import Path

from bot.storage.sftp import SftpStorage
from tests.machine_lock import machine_lock
from tests.mounts import tmpfs
from tests.sshd import SshServer
from tests.storage.conftest import as_uploader, sftp_storage, staging_and_public
from tests.uploader import Uploader

TEAM = "relbot-team"  # the uploaders' group: the uploader account has it as a second group
LEGACY = b"relbot-\xe9quipe"  # a group name in Latin-1, as on an old server: not UTF-8


def uploader_in(uploader: Uploader, group: str | bytes) -> None:
    """The uploader in ``group`` besides its own group (made once and kept, like the
    account): a second group, which ``id -gn`` does not show and ``id -Gn`` does."""
    with machine_lock("accounts"):
        _uploader_in(uploader, group)


def _uploader_in(uploader: Uploader, group: str | bytes) -> None:
    name = os.fsdecode(group)  # as the grp module reads /etc/group
    try:
        members = grp.getgrnam(name).gr_mem
    except KeyError:
        made = subprocess.run(["groupadd", group], capture_output=True, check=False)
        assert made.returncode in (0, 9), made.stderr  # 9: made meanwhile by another run
        members = grp.getgrnam(name).gr_mem
    if uploader.name not in members:
        added = subprocess.run(
            ["usermod", "-a", "-G", group, uploader.name], capture_output=True, check=False
        )
        assert added.returncode == 0, added.stderr


# -- staging and public themselves ------------------------------------------------------------


def test_staging_and_public_the_user_cannot_reach_are_both_named_with_the_servers_reason(
    sshd: SshServer, uploader: Uploader, shared_root: Path, closing: list[SftpStorage]
) -> None:
    private = shared_root / "private"
    private.mkdir(mode=0o700)  # root's alone: the uploader cannot even look inside
    staging, public = private / "staging", private / "public"
    staging.mkdir()
    public.mkdir()
    storage = as_uploader(sshd, uploader, staging, public)
    closing.append(storage)

    problems = storage.check()

    assert problems == [
        f"storage.staging: cannot read {staging} on {storage.where} (Permission denied).",
        f"storage.public: cannot read {public} on {storage.where} (Permission denied).",
    ]


def test_missing_staging_and_public_are_both_named_with_a_quoted_mkdir_and_not_created(
    sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    staging, public = tmp_path / "release files", tmp_path / "publc"
    storage = sftp_storage(sshd, staging, public)
    closing.append(storage)

    problems = storage.check()

    assert problems == [
        f"storage.staging: {staging} does not exist on {storage.where}; create it there "
        f"(mkdir -p '{staging}') or fix the path.",
        f"storage.public: {public} does not exist on {storage.where}; create it there "
        f"(mkdir -p {public}) or fix the path.",
    ]
    assert not staging.exists() and not public.exists()


def test_staging_that_is_a_file_is_not_a_folder(
    sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    _, public = staging_and_public(tmp_path)
    staging = tmp_path / "staging.txt"
    staging.write_text("")
    storage = sftp_storage(sshd, staging, public)
    closing.append(storage)

    problems = storage.check()

    assert problems == [f"storage.staging: {staging} on {storage.where} is not a folder."]


def test_staging_and_public_that_the_server_resolves_into_one_another_name_both_real_paths(
    sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    files = Path(os.path.realpath(tmp_path)) / "srv" / "files"
    (files / "pub").mkdir(parents=True)
    (tmp_path / "staging").symlink_to(files)
    (tmp_path / "public").symlink_to(files / "pub")  # as written, two separate folders
    storage = sftp_storage(sshd, tmp_path / "staging", tmp_path / "public")
    closing.append(storage)

    problems = storage.check()

    assert problems == [
        f"storage on {storage.where}: storage.staging and storage.public overlap ({files} and "
        f"{files}/pub: the same folder, one inside the other, or one through a symbolic "
        "link); publishing would move files onto themselves and lose them, so give them two "
        "separate folders."
    ]


# -- what the bot's account may do there ------------------------------------------------------


def test_a_server_without_exec_says_what_is_lost_and_how_to_allow_it(
    sftp_only_sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    storage = sftp_storage(sftp_only_sshd, *staging_and_public(tmp_path))
    closing.append(storage)

    problems = storage.check()

    assert problems == [
        f"storage: {storage.where} does not let {sftp_only_sshd.user} run commands (exec), so "
        "SHA-256 digests fall back to downloading each file, the bot's copies of a release go "
        "through this machine, files move one at a time and the group cannot be set; allow "
        "exec for this user (no ForceCommand internal-sftp) so hashing, copies and moves "
        "happen on the server."
    ]


def test_staging_and_public_the_user_cannot_write_are_each_named(
    sshd: SshServer, uploader: Uploader, shared_root: Path, closing: list[SftpStorage]
) -> None:
    staging, public = staging_and_public(shared_root)  # root's, mode 755: readable only
    storage = as_uploader(sshd, uploader, staging, public)
    closing.append(storage)

    problems = storage.check()

    assert problems == [
        f"storage: {staging} is not writable by {uploader.name} on {storage.where}; give the "
        "user write access to it.",
        f"storage: {public} is not writable by {uploader.name} on {storage.where}; give the "
        "user write access to it.",
    ]


def test_a_group_the_user_is_in_raises_nothing(
    sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    group = grp.getgrgid(os.getgid()).gr_name
    storage = sftp_storage(sshd, *staging_and_public(tmp_path), group=group)
    closing.append(storage)

    assert storage.check() == []


def test_a_second_group_of_the_user_is_enough(
    sshd: SshServer, uploader: Uploader, shared_root: Path, closing: list[SftpStorage]
) -> None:
    uploader_in(uploader, TEAM)
    staging, public = staging_and_public(shared_root)
    for folder in (staging, public):
        os.chown(folder, uploader.uid, uploader.gid)
    storage = as_uploader(sshd, uploader, staging, public, group=TEAM)
    closing.append(storage)

    assert storage.check() == []


def test_a_group_name_on_the_server_that_is_not_utf8_does_not_stop_the_check(
    sshd: SshServer, uploader: Uploader, shared_root: Path, closing: list[SftpStorage]
) -> None:
    uploader_in(uploader, LEGACY)
    staging, public = staging_and_public(shared_root)
    for folder in (staging, public):
        os.chown(folder, uploader.uid, uploader.gid)
    own = grp.getgrgid(uploader.gid).gr_name
    storage = as_uploader(sshd, uploader, staging, public, group=own)
    closing.append(storage)

    assert storage.check() == []  # its own group is found among the others


def test_a_group_the_user_is_not_in_is_named_with_the_fix(
    sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    storage = sftp_storage(sshd, *staging_and_public(tmp_path), group="relbot-nobody")
    closing.append(storage)

    problems = storage.check()

    assert problems == [
        f"storage.group: {sshd.user} is not in group relbot-nobody on {storage.where}, so "
        "published files cannot be given to it; add the user to the group."
    ]


# -- the work folder's filesystem, and a server that cannot be inspected -----------------------


def test_a_work_folder_that_is_another_filesystems_mount_point_is_refused(
    sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    staging, public = staging_and_public(tmp_path)
    with tmpfs(tmp_path / "work", "size=64k,mode=0700") as work:  # its parent is public's
        storage = sftp_storage(sshd, staging, public, work=str(work))
        closing.append(storage)

        problems = storage.check()

    assert problems == [
        f"storage.work: the bot's work folder {work} and public {public} on {storage.where} "
        "are on different filesystems, so publishing cannot be one rename; set [storage] work "
        "to a folder on public's filesystem (the default, beside public, is on it unless "
        "public is a mount point of its own)."
    ]


def test_folders_the_server_cannot_stat_are_reported_with_the_commands_error(
    sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]
) -> None:
    staging, public = staging_and_public(tmp_path)
    parent = tmp_path / "missing"
    storage = sftp_storage(sshd, staging, public, work=str(parent / "work"))
    closing.append(storage)
    said = subprocess.run(  # loopback: the server's stat is this machine's
        ["stat", "-c", "%d", "--", str(parent)],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    ).stderr.splitlines()[0]

    problems = storage.check()

    # The work folder's own sentence, with its fix, comes first; the command's error after.
    assert problems == [
        f"storage.work: {parent} does not exist; create it (mkdir -p {parent}) or set "
        "[storage] work to a folder whose parent exists.",
        f"storage: cannot inspect the folders on {storage.where}: {said}.",
    ]
