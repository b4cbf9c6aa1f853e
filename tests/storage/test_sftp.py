"""What only the SFTP storage has: host keys, client keys, a server that goes away, round
trips, the exec-less fallback and permissions. Against a real OpenSSH server on loopback."""

from __future__ import annotations

import grp
import hashlib
import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import PromotionConflict, PublishStopped, StagingUnreachable, StorageError
from bot.storage.sftp import (
    Connection,
    HostKeyRejected,
    Move,
    SftpStorage,
    SshRefused,
)
from tests.sshd import SshServer
from tests.storage.conftest import Backend, plan_for, publish, sftp_storage

TAG = "3.14.0rc2"
RC2 = ReleaseTag.parse(TAG)
FILES = {
    "Python-3.14.0rc2.tgz": "tgz",
    "python-3.14.0rc2-amd64.exe": "exe",
    "amd64rc2/core.msi": "msi",
    "docs/python-3.14.0rc2-docs.epub": "epub",
    "windows-3.14.0rc2.json": "{}",
}


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    return staging, public


def stage(staging: Path, files: dict[str, str] = FILES) -> None:
    for path, content in files.items():
        (staging / TAG / path).parent.mkdir(parents=True, exist_ok=True)
        (staging / TAG / path).write_text(content)


def as_backend(staging: Path, public: Path) -> Backend:
    """Only for ``plan_for`` (which reads the staged files)."""
    return Backend("sftp", staging, public, lambda: None, lambda k: None)  # type: ignore[arg-type,return-value]


def keygen(path: Path, *args: str) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-C", "test", "-f", path, *args], check=True)
    return path


# -- host keys and client keys ------------------------------------------------------------


def test_unknown_host_key_is_refused_naming_the_host_and_ssh_keyscan(
    sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    storage = SftpStorage(
        "127.0.0.1", sshd.port, sshd.user, sshd.client_key, known_hosts, *map(str, folders)
    )
    with pytest.raises(HostKeyRejected) as refused:
        storage.staged_tags()
    message = str(refused.value)
    assert f"[127.0.0.1]:{sshd.port}" in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {known_hosts}" in message
    assert known_hosts.read_text() == ""  # never auto-accepted
    assert storage.check() == [message]


def test_a_host_key_known_for_another_port_is_not_accepted(
    sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    known_hosts = tmp_path / "known_hosts"
    key = sshd.known_hosts.read_text().split(" ", 1)[1]
    known_hosts.write_text(f"127.0.0.1 {key}")  # port 22's entry
    storage = SftpStorage(
        "127.0.0.1", sshd.port, sshd.user, sshd.client_key, known_hosts, *map(str, folders)
    )
    with pytest.raises(HostKeyRejected, match="is not in"):
        storage.staged_tags()


def test_changed_host_key_is_refused(
    sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    other = keygen(tmp_path / "other", "-t", "ed25519", "-N", "")
    known_hosts = tmp_path / "known_hosts"
    public_key = " ".join(other.with_suffix(".pub").read_text().split()[:2])
    known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {public_key}\n")
    storage = SftpStorage(
        "127.0.0.1", sshd.port, sshd.user, sshd.client_key, known_hosts, *map(str, folders)
    )
    with pytest.raises(HostKeyRejected) as refused:
        storage.staged_tags()
    assert "differs" in str(refused.value)
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1" in str(refused.value)


def test_missing_known_hosts_file_is_refused(
    sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    storage = SftpStorage(
        "127.0.0.1",
        sshd.port,
        sshd.user,
        sshd.client_key,
        tmp_path / "nowhere",
        *map(str, folders),
    )
    with pytest.raises(SshRefused, match=r"storage\.known_hosts"):
        storage.staged_tags()


def test_wrong_client_key_is_refused(
    sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    stranger = keygen(tmp_path / "stranger", "-t", "ed25519", "-N", "")
    storage = SftpStorage(
        "127.0.0.1", sshd.port, sshd.user, stranger, sshd.known_hosts, *map(str, folders)
    )
    with pytest.raises(SshRefused, match="refused the key") as refused:
        storage.staged_tags()
    assert str(stranger) in str(refused.value)


def test_rsa_key_with_a_passphrase_is_accepted_and_never_shown(
    own_sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    secret = "correct horse battery staple"
    rsa = keygen(tmp_path / "rsa", "-t", "rsa", "-b", "2048", "-N", secret)
    with (own_sshd.root / "authorized_keys").open("a") as keys:
        keys.write(rsa.with_suffix(".pub").read_text())

    def storage(passphrase: str | None) -> SftpStorage:
        return SftpStorage(
            "127.0.0.1",
            own_sshd.port,
            own_sshd.user,
            rsa,
            own_sshd.known_hosts,
            *map(str, folders),
            passphrase=passphrase,
        )

    good = storage(secret)
    assert good.staged_tags() == []
    assert secret not in repr(good)
    with pytest.raises(SshRefused, match="passphrase") as locked:
        storage(None).staged_tags()
    with pytest.raises(SshRefused) as wrong:
        storage("wrong guess").staged_tags()
    for error in (locked.value, wrong.value):
        assert secret not in str(error) and "wrong guess" not in str(error)


# -- a server that goes away --------------------------------------------------------------


def test_sshd_stopped_during_a_scan_is_unreachable_then_recovers_after_restart(
    own_sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    stage(staging)

    class StopsServerMidScan(SftpStorage):
        stop = True

        def _listdir(self, conn: Connection, folder: str) -> list[object]:  # type: ignore[override]
            found = super()._listdir(conn, folder)
            if self.stop:
                own_sshd.stop()
            return found  # type: ignore[return-value]

    storage = sftp_storage(own_sshd, staging, public, StopsServerMidScan)
    assert isinstance(storage, StopsServerMidScan)
    with pytest.raises(StagingUnreachable) as lost:
        storage.list_staging(RC2)
    assert f"[127.0.0.1]:{own_sshd.port}" in str(lost.value)
    with pytest.raises(StagingUnreachable, match="Cannot reach"):  # still down
        storage.list_staging(RC2)

    own_sshd.start()
    storage.stop = False
    listing = storage.list_staging(RC2)
    assert listing is not None and set(listing) == set(FILES)


def test_a_server_restart_between_calls_goes_unnoticed(
    own_sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    storage = sftp_storage(own_sshd, *folders)
    assert storage.staged_tags() == []
    own_sshd.restart()
    assert storage.staged_tags() == []  # the dead connection is replaced, the call retried
    assert storage.requests["connect"] == 2


def test_sshd_stopped_in_the_middle_of_a_publish_then_restarted_publishes_exactly_once(
    own_sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    (public / "3.14.0").mkdir()  # a prerelease shares it: the per-file batch
    (public / "3.14.0" / "Python-3.14.0rc1.tgz").write_text("rc1")
    stage(staging)
    plan = plan_for(as_backend(staging, public), TAG, list(FILES))

    class DiesMidBatch(SftpStorage):
        def _run_batch(self, conn: Connection, moves: list[Move]) -> bool:
            super()._run_batch(conn, moves[:2])
            own_sshd.stop()
            return super()._run_batch(conn, moves[2:])

    assert sftp_storage(own_sshd, staging, public).freeze(plan) == []
    with pytest.raises(StagingUnreachable):
        sftp_storage(own_sshd, staging, public, DiesMidBatch).promote(plan)
    # rc1 and the first two of the four single files (amd64rc2/ was made for its own)
    public_now = {str(p.relative_to(public)) for p in public.rglob("*") if p.is_file()}
    assert (
        len(
            public_now - {"3.14.0/Python-3.14.0rc1.tgz"} - {f"doc/{TAG}/python-3.14.0rc2-docs.epub"}
        )
        == 2
    )

    own_sshd.start()
    report = sftp_storage(own_sshd, staging, public).promote(plan)

    # docs/ was renamed and two files moved before the drop: "already"
    assert (report.renamed, report.moved, report.already) == ((), 2, 3)
    assert report.problems == ()
    public_files = sorted(str(p.relative_to(public)) for p in public.rglob("*") if p.is_file())
    assert public_files == sorted(
        [
            "3.14.0/Python-3.14.0rc1.tgz",
            f"doc/{TAG}/python-3.14.0rc2-docs.epub",
            *(f"3.14.0/{p}" for p in FILES if not p.startswith("docs/")),
        ]
    )


def test_calls_from_many_threads_share_one_connection(
    sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    stage(staging)
    storage = sftp_storage(sshd, staging, public)
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(storage.list_staging(RC2))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r == results[0] for r in results)
    assert storage.requests["connect"] == 1


# -- round trips and hashing ----------------------------------------------------------------


def test_steady_state_scan_is_one_listing_per_folder_and_no_hashing(
    sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    stage(staging)
    storage = sftp_storage(sshd, staging, public)
    listing = storage.list_staging(RC2)
    assert listing is not None
    first = storage.digest(RC2, list(listing))
    assert storage.requests["hash"] == 1  # every file in one command

    storage.requests.clear()
    again = storage.list_staging(RC2)
    assert again is not None
    assert storage.digest(RC2, list(again)) == first
    # release folder, amd64rc2/ and docs/: three listings, and one lstat of the release
    # folder (a symlinked release folder is refused, never followed); nothing else
    assert dict(storage.requests) == {"listdir": 3, "stat": 1}


def test_digest_is_cached_by_size_and_mtime(sshd: SshServer, folders: tuple[Path, Path]) -> None:
    staging, public = folders
    stage(staging, {"Python-3.14.0rc2.tgz": "aaaa"})
    file = staging / TAG / "Python-3.14.0rc2.tgz"
    storage = sftp_storage(sshd, staging, public)
    storage.list_staging(RC2)
    storage.digest(RC2, ["Python-3.14.0rc2.tgz"])
    storage.digest(RC2, ["Python-3.14.0rc2.tgz"])
    assert storage.requests["hash"] == 1

    file.write_text("bbbb")  # same size
    os.utime(file, (1_800_000_000, 1_800_000_000))
    storage.list_staging(RC2)
    digest = storage.digest(RC2, ["Python-3.14.0rc2.tgz"])["Python-3.14.0rc2.tgz"]
    assert digest == hashlib.sha256(b"bbbb").hexdigest()
    assert storage.requests["hash"] == 2


def test_digest_of_a_missing_file_is_a_storage_error(
    sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    stage(staging, {"Python-3.14.0rc2.tgz": "x"})
    storage = sftp_storage(sshd, staging, public)
    with pytest.raises(StorageError, match="No such file"):
        storage.digest(RC2, ["Python-3.14.0rc2.tgz", "gone.exe"])


def test_a_path_outside_the_release_is_refused(sshd: SshServer, folders: tuple[Path, Path]) -> None:
    storage = sftp_storage(sshd, *folders)
    with pytest.raises(StorageError, match="not a path inside"):
        storage.digest(RC2, ["../../etc/passwd"])


def test_a_plan_naming_a_symlink_is_refused_before_anything_moves(
    sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    staging, public = folders
    stage(staging, {"Python-3.14.0rc2.tgz": "tgz"})
    secret = tmp_path / "secret"
    secret.write_text("not for the public")
    (staging / TAG / "python-3.14.0rc2.exe").symlink_to(secret)
    plan = plan_for(
        as_backend(staging, public), TAG, ["Python-3.14.0rc2.tgz", "python-3.14.0rc2.exe"]
    )
    storage = sftp_storage(sshd, staging, public)
    assert storage.freeze(plan) == ["python-3.14.0rc2.exe is not a regular file"]
    with pytest.raises(PublishStopped, match=r"copy of python-3\.14\.0rc2\.exe is missing"):
        storage.promote(plan)
    assert list(public.iterdir()) == []
    assert (staging / TAG / "python-3.14.0rc2.exe").is_symlink()


# -- a server without exec -----------------------------------------------------------------


def test_without_exec_hashing_downloads_and_files_move_one_by_one(
    sftp_only_sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    stage(staging)
    (public / "3.14.0").mkdir()
    storage = sftp_storage(sftp_only_sshd, staging, public)
    problems = storage.check()
    assert len(problems) == 1 and "exec" in problems[0] and "download" in problems[0]

    listing = storage.list_staging(RC2)
    assert listing is not None
    digests = storage.digest(RC2, list(listing))
    assert digests == {p: hashlib.sha256(c.encode()).hexdigest() for p, c in FILES.items()}
    assert storage.requests["download"] == len(FILES) and storage.requests["hash"] == 0

    plan = plan_for(as_backend(staging, public), TAG, list(FILES))
    assert storage.freeze(plan) == []  # each file through the bot: hashed as written
    assert storage.requests["download"] == 2 * len(FILES)
    report = storage.promote(plan)
    assert report.renamed == ("doc",) and report.moved == len(FILES) - 1
    assert storage.requests["hardlink"] == len(FILES) - 1
    assert report.problems == ()  # no inode over SFTP: the public files were hashed
    assert (public / "3.14.0" / "amd64rc2" / "core.msi").read_text() == "msi"
    assert stat.S_IMODE((public / "3.14.0" / "amd64rc2" / "core.msi").stat().st_mode) == 0o444


# -- check and permissions -----------------------------------------------------------------


def test_check_names_a_missing_folder_and_does_not_create_it(
    sshd: SshServer, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    storage = sftp_storage(sshd, blocker / "staging", folders[1])
    problems = storage.check()
    assert len(problems) == 1 and problems[0].startswith("storage.staging: ")
    assert "does not exist" in problems[0] and "mkdir -p" in problems[0]

    typo = tmp_path / "stagin"
    problems = sftp_storage(sshd, typo, folders[1]).check()
    assert len(problems) == 1 and "does not exist" in problems[0]
    assert not typo.exists(), "a mistyped path must not become a folder"


def test_check_refuses_a_work_folder_off_publics_filesystem(
    sshd: SshServer, tmp_path: Path
) -> None:
    # A writable folder on another filesystem than the temporary folder (a tmpfs, usually).
    other = next(
        (
            Path(p)
            for p in ("/dev/shm", "/run", "/tmp", "/var/tmp")
            if Path(p).is_dir()
            and os.access(p, os.W_OK)
            and Path(p).stat().st_dev != tmp_path.stat().st_dev
        ),
        None,
    )
    assert other is not None, "this test needs a writable tmpfs such as /dev/shm"
    work = other / f"relbot-test-{os.getpid()}"
    (tmp_path / "staging").mkdir()
    (tmp_path / "public").mkdir()
    storage = sftp_storage(sshd, tmp_path / "staging", tmp_path / "public", work=str(work))
    try:
        problems = storage.check()
    finally:
        if work.exists():
            work.rmdir()
    assert len(problems) == 1 and "different filesystems" in problems[0]
    assert "storage.work" in problems[0]


def test_relative_server_paths_are_refused(sshd: SshServer) -> None:
    with pytest.raises(StorageError, match="absolute path"):
        SftpStorage("h", 22, "u", sshd.client_key, sshd.known_hosts, "staging", "/srv/public")


def test_published_files_get_the_group_and_keep_the_bots_read_only_modes(
    sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    group = grp.getgrgid(os.getgid()).gr_name
    stage(staging)
    for path in (staging / TAG).rglob("*"):
        path.chmod(0o770 if path.is_dir() else 0o664)  # the uploaders' group may write
    storage = sftp_storage(sshd, staging, public, group=group)
    plan = plan_for(as_backend(staging, public), TAG, list(FILES))

    publish(storage, plan)

    entries = list(public.rglob("*"))
    assert {stat.S_IMODE(p.stat().st_mode) for p in entries if p.is_dir()} == {0o755}
    assert {stat.S_IMODE(p.stat().st_mode) for p in entries if p.is_file()} == {0o444}
    assert {p.stat().st_gid for p in entries} == {os.getgid()}
    assert {p.stat().st_uid for p in entries} == {os.getuid()}
    before = {p: p.stat().st_ctime_ns for p in entries}

    storage.promote(plan)  # a resumed publish: everything is public, nothing is touched

    assert {p: p.stat().st_ctime_ns for p in before} == before


@pytest.mark.parametrize("same_content", [True, False], ids=["identical", "different"])
def test_a_target_appearing_during_the_batch_is_never_overwritten(
    sshd: SshServer, folders: tuple[Path, Path], same_content: bool
) -> None:
    staging, public = folders
    (public / "3.14.0").mkdir()
    stage(staging)
    plan = plan_for(as_backend(staging, public), TAG, list(FILES))
    intruder = public / "3.14.0" / "python-3.14.0rc2-amd64.exe"

    class Raced(SftpStorage):
        def _run_batch(self, conn: Connection, moves: list[Move]) -> bool:
            intruder.write_text("exe" if same_content else "someone else's")
            return super()._run_batch(conn, moves)

    storage = sftp_storage(sshd, staging, public, Raced)
    assert storage.freeze(plan) == []
    copy = public.parent / ".relbot-public" / "frozen" / TAG / "tree" / "3.14.0"
    if same_content:
        report = storage.promote(plan)
        # The batch stopped at the intruder and the rest went file by file; the intruder's
        # file has the right bytes but is not the bot's: said, never replaced.
        assert report.problems == ("3.14.0/python-3.14.0rc2-amd64.exe is not the bot's copy",)
        assert intruder.read_text() == "exe"
        assert (public / "3.14.0" / "windows-3.14.0rc2.json").read_text() == "{}"
    else:
        with pytest.raises(PromotionConflict, match="appeared in public"):
            storage.promote(plan)
        assert intruder.read_text() == "someone else's"
        # The confirmed file stays in the bot's area; /abort drops it.
        assert (copy / "python-3.14.0rc2-amd64.exe").read_text() == "exe"


def test_a_fresh_digest_sees_a_same_size_rewrite_within_the_same_second(
    sshd: SshServer, folders: tuple[Path, Path]
) -> None:
    staging, public = folders
    stage(staging, {"Python-3.14.0rc2.tgz": "aaaa"})
    file = staging / TAG / "Python-3.14.0rc2.tgz"
    os.utime(file, (1_800_000_000.2, 1_800_000_000.2))
    storage = sftp_storage(sshd, staging, public)
    storage.list_staging(RC2)
    before = storage.digest(RC2, ["Python-3.14.0rc2.tgz"])["Python-3.14.0rc2.tgz"]
    file.write_text("bbbb")  # same size, and SFTP's whole-second mtime does not move
    os.utime(file, (1_800_000_000.7, 1_800_000_000.7))
    storage.list_staging(RC2)
    assert storage.digest(RC2, ["Python-3.14.0rc2.tgz"])["Python-3.14.0rc2.tgz"] == before
    fresh = storage.digest(RC2, ["Python-3.14.0rc2.tgz"], fresh=True)["Python-3.14.0rc2.tgz"]
    assert fresh == hashlib.sha256(b"bbbb").hexdigest()
