"""Rules of the SFTP filesystem under the storage algorithms (bot/storage/sftp_fs.py) that
the freeze and the promotion do not show on their own: the group published files get, what a
failed link says, the lock file's create-only write, and the round trips counted by kind
(what the bench and the metrics report). Against the real OpenSSH server on loopback."""

from __future__ import annotations

import grp
import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path

import paramiko
import pytest

from bot.domain.files import RELEASE_FOLDER
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.storage.primitives import inside
from bot.storage.remote_hash import chunks
from bot.storage.sftp import Connection, SftpStorage
from bot.storage.sftp_fs import SftpFs, _links
from tests.sshd import SshServer
from tests.storage.conftest import (
    Backend,
    as_uploader,
    on_fs,
    plan_for,
    publish,
    sftp_storage,
    staged_release,
)
from tests.uploader import Uploader

TAG = "3.14.0rc2"
FILES = ["Python-3.14.0rc2.tgz", "python-3.14.0rc2-amd64.exe", "python-3.14.0rc2-arm64.exe"]
DOCS = ["docs/index.html", "docs/library/os.html"]


@pytest.fixture
def team(tmp_path: Path) -> Backend:
    return staged_release(tmp_path, TAG, [*FILES, *DOCS])


# -- the group of what a publish made public --------------------------------------------------


def test_what_a_publish_made_public_gets_the_storage_group_and_the_folder_it_added_to_does_not(
    sshd: SshServer, team: Backend, uploader: Uploader, closing: list[SftpStorage]
) -> None:
    """The docs' folder is renamed into public whole, the files are linked one by one into
    3.14.0/ (public before this release): each gets the uploaders' group, as on
    python.org, with the bot's read-only modes; 3.14.0/ itself keeps its own."""
    existing = team.public / "3.14.0"
    existing.mkdir()
    assert existing.stat().st_gid != uploader.gid
    group = grp.getgrgid(uploader.gid).gr_name
    storage = sftp_storage(sshd, team.staging, team.public, group=group)
    closing.append(storage)

    report = publish(storage, plan_for(team, TAG, [*FILES, *DOCS]))

    assert report.problems == ()
    made = [team.public / "doc" / TAG, *(team.public / "doc" / TAG).rglob("*"), *existing.iterdir()]
    assert len([p for p in made if p.is_file()]) == len(FILES) + len(DOCS)
    assert {p.relative_to(team.public).as_posix(): p.stat().st_gid for p in made} == {
        p.relative_to(team.public).as_posix(): uploader.gid for p in made
    }
    assert {p.stat().st_mode & 0o777 for p in made if p.is_file()} == {0o444}
    assert existing.stat().st_gid == os.getgid()  # only added to: left as it was


def test_a_publish_whose_flush_and_group_succeed_logs_no_warning(
    sshd: SshServer,
    team: Backend,
    uploader: Uploader,
    closing: list[SftpStorage],
    caplog: pytest.LogCaptureFixture,
) -> None:
    group = grp.getgrgid(uploader.gid).gr_name
    (team.public / "doc").mkdir()  # two folders get new entries: public/ and public/doc/
    storage = sftp_storage(sshd, team.staging, team.public, group=group)
    closing.append(storage)

    with caplog.at_level(logging.WARNING, logger="bot.storage"):
        report = publish(storage, plan_for(team, TAG, [*FILES, *DOCS]))

    assert report.problems == ()
    assert caplog.messages == []


def test_a_group_the_server_does_not_know_is_logged_and_the_publish_stands(
    sshd: SshServer, team: Backend, closing: list[SftpStorage], caplog: pytest.LogCaptureFixture
) -> None:
    """The files are public once moved: a group that cannot be given is the operator's to
    fix (``relbot check`` names it), said in the log, never a failed publish."""
    storage = sftp_storage(sshd, team.staging, team.public, group="relbot-no-such-group")
    closing.append(storage)

    with caplog.at_level(logging.WARNING, logger="bot.storage"):
        report = publish(storage, plan_for(team, TAG, [*FILES, *DOCS]))

    assert report.problems == ()
    assert set(team.public_files()) == {
        *(f"3.14.0/{f}" for f in FILES),
        *(f"doc/{TAG}/{d.removeprefix('docs/')}" for d in DOCS),
    }
    assert caplog.messages == [
        f"Finishing the publication on {storage.where}: find: 'relbot-no-such-group' is not "
        "the name of an existing group"
    ]


# -- a link that fails --------------------------------------------------------------------------


@pytest.fixture
def fs_storage(sshd: SshServer, tmp_path: Path, closing: list[SftpStorage]) -> SftpStorage:
    storage = sftp_storage(sshd, tmp_path / "staging", tmp_path / "public")
    closing.append(storage)
    return storage


def failure(op: Callable[[], None]) -> OSError | None:
    """What ``op`` raised (inside the storage's call, which words it as a StorageError)."""
    try:
        op()
    except OSError as err:
        return err
    return None


def test_a_link_onto_an_existing_name_is_refused_naming_that_name(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    (tmp_path / "copy").write_text("the bot's")
    (tmp_path / "taken").write_text("someone else's")
    copy, taken = str(tmp_path / "copy"), str(tmp_path / "taken")

    refused = on_fs(fs_storage, lambda fs: failure(lambda: fs.link(copy, taken)))

    assert isinstance(refused, FileExistsError) and str(refused) == taken
    assert (tmp_path / "taken").read_text() == "someone else's"


def test_a_link_from_a_missing_copy_is_not_mistaken_for_a_taken_name(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    gone, free = str(tmp_path / "gone"), str(tmp_path / "free")

    refused = on_fs(fs_storage, lambda fs: failure(lambda: fs.link(gone, free)))

    assert isinstance(refused, FileNotFoundError)
    assert not (tmp_path / "free").exists()


class CopyVanishes(SftpStorage):
    """The bot's copy of the first file is removed (by hand, on the server) between the
    promotion's look at it and its link."""

    def _link(self, conn: Connection, source: str, target: str) -> None:
        if source.endswith(FILES[0]):
            os.unlink(source)  # on loopback, the server's path
        super()._link(conn, source, target)


def test_without_exec_a_copy_gone_before_its_link_stops_the_publish_saying_why(
    sftp_only_sshd: SshServer, team: Backend, closing: list[SftpStorage]
) -> None:
    (team.public / "3.14.0").mkdir()  # files linked one by one
    storage = sftp_storage(sftp_only_sshd, team.staging, team.public, CopyVanishes)
    closing.append(storage)

    with pytest.raises(StorageError) as stopped:
        publish(storage, plan_for(team, TAG, FILES))

    assert str(stopped.value) == (
        f"Cannot publish into {team.public / '3.14.0'}: No such file; nothing was made public."
    )


# -- the lock file: written only where nothing is ---------------------------------------------


def test_a_small_file_is_created_only_where_nothing_is(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    lock = str(tmp_path / "lock")

    first = on_fs(fs_storage, lambda fs: fs.create_small(lock, b"the first bot"))
    second = on_fs(fs_storage, lambda fs: fs.create_small(lock, b"the second bot"))

    assert (first, second) == (True, False)
    assert Path(lock).read_bytes() == b"the first bot"
    assert fs_storage.requests["write"] == 2


def test_a_folder_the_bot_makes_is_never_open_wider_than_its_mode(
    fs_storage: SftpStorage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work area (0700) is made with its mode, then set to it past the server's umask:
    not made open to all and closed a round trip later, a moment another login could use."""
    modes: list[int] = []
    chmod = paramiko.SFTPClient.chmod

    def seen_then_chmod(sftp: paramiko.SFTPClient, path: str, mode: int) -> None:
        modes.append(os.stat(path).st_mode & 0o777)  # on loopback: the server's folder
        chmod(sftp, path, mode)

    monkeypatch.setattr(paramiko.SFTPClient, "chmod", seen_then_chmod)
    work = tmp_path / "work"

    on_fs(fs_storage, lambda fs: fs.mkdir(str(work), 0o700))

    assert modes == [0o700]
    assert work.stat().st_mode & 0o777 == 0o700


# -- round trips, counted by kind ---------------------------------------------------------------


def test_renames_replaces_and_stats_are_each_one_round_trip_of_their_kind(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text(name)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    on_fs(fs_storage, lambda fs: None)  # connected
    fs_storage.requests.clear()

    def work(fs: SftpFs) -> tuple[object, object]:
        fs.rename(str(tmp_path / "a"), str(tmp_path / "a2"))
        fs.rename(str(tmp_path / "b"), str(tmp_path / "b2"))
        fs.replace(str(tmp_path / "c"), str(tmp_path / "a2"))
        fs.replace(str(tmp_path / "a2"), str(tmp_path / "b2"))
        return fs.stat(str(tmp_path / "link")), fs.stat(str(tmp_path / "b2"))

    gone, there = on_fs(fs_storage, work)

    assert gone is None and getattr(there, "st_size", None) == 1
    assert (tmp_path / "b2").read_text() == "c"
    assert sorted(os.listdir(tmp_path)) == ["b2", "link"]
    assert dict(fs_storage.requests) == {"rename": 4, "stat": 2}


def test_each_request_goes_out_at_once_not_held_for_the_servers_ack(
    fs_storage: SftpStorage,
) -> None:
    """Nagle's algorithm holds a small write until the previous one is acknowledged, and the
    server delays that ACK (40 ms on Linux): every SFTP write waited for it."""

    def nodelay(conn: Connection) -> int:
        transport = conn.client.get_transport()
        assert transport is not None and isinstance(transport.sock, socket.socket)
        return transport.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

    assert fs_storage._ssh.call("test", nodelay) != 0


def test_stamps_of_more_files_than_one_command_holds_come_back_one_per_file(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    """The stamps are asked in commands of bounded length: every command's lines are kept."""
    folder = tmp_path / ("a-long-folder-name-" * 5)
    folder.mkdir()
    paths = []
    for n in range(400):  # about 130 paths per command at this length
        file = folder / f"python-3.14.0-embed-amd64-{n:04}.zip"
        file.write_bytes(b"x" * n)
        paths.append(str(file))
    assert len(list(chunks(paths))) > 1

    stamps = on_fs(fs_storage, lambda fs: fs.stamps(paths))

    assert list(stamps) == paths
    assert [stamp.size if stamp else None for stamp in stamps.values()] == list(range(400))


# -- paths and the bot's own uid ------------------------------------------------------------------


@pytest.mark.parametrize("relative", ["/etc/passwd", "../public", "3.14.0/../../etc"])
def test_a_path_that_would_step_outside_its_root_is_refused(relative: str) -> None:
    with pytest.raises(StorageError) as err:
        inside("/srv/staging", relative)

    assert str(err.value) == f"{relative!r} is not a path inside /srv/staging."


def test_the_root_itself_is_named_without_a_trailing_slash() -> None:
    assert inside("/srv/staging", "") == "/srv/staging"
    assert inside("/srv/staging", "3.14.0/a.tgz") == "/srv/staging/3.14.0/a.tgz"


@pytest.mark.parametrize("server", ["sshd", "sftp_only_sshd"], ids=["exec", "sftp-only"])
def test_the_bots_uid_is_its_login_users_not_roots(
    server: str, request: pytest.FixtureRequest, uploader: Uploader, tmp_path: Path
) -> None:
    """Every ownership check compares a file's owner with this uid: the bot logged in as a
    user that is not root must learn that user's uid, with exec or without."""
    sshd: SshServer = request.getfixturevalue(server)
    storage = as_uploader(sshd, uploader, tmp_path / "staging", tmp_path / "public")
    try:
        assert on_fs(storage, lambda fs: fs.uid()) == uploader.uid != 0
    finally:
        storage.close()


# -- identities: one stat for many paths --------------------------------------------------------


def test_identities_name_each_present_path_and_none_for_a_missing_one(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    """A path that is not there is simply absent (stat's 'No such file' for it, exit
    status 1): no error, whatever else the command found."""
    (tmp_path / "a.tgz").write_bytes(b"a" * 3)
    (tmp_path / "b.exe").write_bytes(b"b" * 5)
    paths = [str(tmp_path / "a.tgz"), str(tmp_path / "b.exe"), str(tmp_path / "gone.zip")]

    found = on_fs(fs_storage, lambda fs: fs.identities(paths))

    assert list(found) == paths
    a, b, gone = found.values()
    assert a is not None and (a.size, a.uid, a.ino) == (3, 0, (tmp_path / "a.tgz").stat().st_ino)
    assert b is not None and b.size == 5 and not b.is_dir
    assert gone is None


def test_identities_that_stat_cannot_see_stop_with_the_servers_words(
    sshd: SshServer, uploader: Uploader, shared_root: Path
) -> None:
    """A path in a folder the bot may not search is not 'missing': taking it for absent
    would let a publish link over it. The look stops, in stat's words."""
    locked = shared_root / "locked"
    locked.mkdir(mode=0o700)  # root's: the uploader's login cannot search it
    (locked / "a.tgz").write_text("a")
    paths = [str(locked / "a.tgz"), str(shared_root / "gone.zip")]
    storage = as_uploader(sshd, uploader, shared_root / "staging", shared_root / "public")
    try:
        with pytest.raises(StorageError) as stopped:
            on_fs(storage, lambda fs: fs.identities(paths))
    finally:
        storage.close()

    assert str(stopped.value) == (
        f"Cannot look at files on [127.0.0.1]:{sshd.port}: "
        f"stat: cannot statx '{locked / 'a.tgz'}': Permission denied."
    )


# -- a command's reply that cannot be trusted ---------------------------------------------------

Reply = tuple[int, bytes, bytes]


def garbled(storage: SftpStorage, start: str, change: Callable[[Reply], Reply]) -> None:
    """The server's reply to each command that starts with ``start`` (run for real) passed
    through ``change``: a reply cut short, a shell that failed half-way. The connection is
    made and probed first, with the real replies."""
    on_fs(storage, lambda fs: None)
    real = storage._ssh.exec

    def exec_(conn: Connection, command: str, *, limit: int | None = None) -> Reply:
        reply = real(conn, command, limit=limit)
        return change(reply) if command.startswith(start) else reply

    storage._ssh.exec = exec_  # type: ignore[method-assign]


def untrusted_replies(tool: str) -> pytest.MarkDecorator:
    """The test once per reply that cannot be trusted: a line lost, and a shell that failed
    running ``tool`` (``change`` for :func:`garbled`, ``why`` the sentence's reason)."""
    failed = f"sh: 1: {tool}: Too many open files"
    return pytest.mark.parametrize(
        ("change", "why"),
        [
            (lambda r: (0, r[1].split(b"\n", 1)[1], b""), "unexpected output"),
            (lambda r: (1, r[1], f"{failed}\nmore\n".encode()), failed),
        ],
        ids=["a-line-lost", "the-shell-failed"],
    )


@untrusted_replies("stat")
def test_stamps_from_a_reply_that_cannot_be_trusted_stop_the_look(
    fs_storage: SftpStorage, tmp_path: Path, change: Callable[[Reply], Reply], why: str
) -> None:
    """Each stamp is matched to its path by its line: one line missing, or a shell that
    failed, would pair stamps with the wrong files."""
    paths = []
    for name in ("a.tgz", "b.exe"):
        (tmp_path / name).write_text(name)
        paths.append(str(tmp_path / name))
    garbled(fs_storage, "export LC_ALL=C; for p in", change)

    with pytest.raises(StorageError) as stopped:
        on_fs(fs_storage, lambda fs: fs.stamps(paths))

    assert str(stopped.value) == f"Cannot look at files on {fs_storage.where}: {why}."


def test_identities_from_a_stat_killed_before_a_word_stop_saying_so(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    """stat killed by a signal (the server out of memory): no record, no message. Taking
    its silence for 'missing' would let a publish link over the files."""
    present = tmp_path / "a.tgz"
    present.write_text("a")
    garbled(fs_storage, "LC_ALL=C stat", lambda r: (-1, b"", b""))

    with pytest.raises(StorageError) as stopped:
        on_fs(fs_storage, lambda fs: fs.identities([str(present)]))

    assert str(stopped.value) == f"Cannot look at files on {fs_storage.where}: no output."


def test_a_failing_id_stops_the_login_naming_its_error(fs_storage: SftpStorage) -> None:
    garbled(fs_storage, "id -u", lambda r: (1, b"", b"id: cannot find name for user ID 1234\n"))

    with pytest.raises(StorageError) as stopped:
        on_fs(fs_storage, lambda fs: fs.uid())

    assert (
        str(stopped.value) == "Cannot learn the bot's uid: id: cannot find name for user ID 1234."
    )


# -- the hard-link count of a listing's entry -----------------------------------------------------


@pytest.mark.parametrize(
    ("longname", "links"),
    [
        ("-rw-r--r--    2 relbot   relbot   5 Dec  4 19:00 a.tgz", 2),
        ("-rw-r--r-- 3", 3),
        ("-rw-r--r--    x relbot", 1),  # a server's own format: no count to read
        ("a.tgz", 1),
        ("", 1),
    ],
)
def test_the_link_count_is_read_from_the_long_name_where_it_is_given(
    longname: str, links: int
) -> None:
    assert _links(longname) == links


def listed_by_uploader(
    server: SshServer, account: Uploader, team: Backend, *, locked: str
) -> dict[str, tuple[bool, str]]:
    """The release's listing, each entry's (regular, problem), by a storage logged in as the
    uploader's account, once ``locked`` (below the release folder) is root's alone."""
    os.chmod(team.staging / TAG / locked, 0o700)  # root's: the uploader's login cannot list it
    storage = as_uploader(server, account, team.staging, team.public)
    try:
        found = storage.list_staging(ReleaseTag.parse(TAG))
    finally:
        storage.close()
    assert found is not None
    return {key: (entry.regular, entry.problem) for key, entry in found.items()}


def test_a_release_folder_the_bot_cannot_read_is_one_entry_saying_why(
    sshd: SshServer, uploader: Uploader, shared_root: Path
) -> None:
    """Over SFTP as on local folders: the release's problem, in the server's words, not a
    failed scan."""
    team = staged_release(shared_root, TAG, FILES)

    assert listed_by_uploader(sshd, uploader, team, locked="") == {
        RELEASE_FOLDER: (False, "cannot be read (Permission denied)")
    }


def test_a_sub_folder_the_bot_cannot_read_is_reported_and_the_rest_listed(
    sshd: SshServer, uploader: Uploader, shared_root: Path
) -> None:
    team = staged_release(shared_root, TAG, [*FILES, *DOCS])

    assert listed_by_uploader(sshd, uploader, team, locked="docs") == {
        **{name: (True, "") for name in FILES},
        "docs/": (False, "a folder that cannot be read: Permission denied"),
    }


def test_a_tree_the_login_cannot_remove_stops_with_rms_words(
    sshd: SshServer, uploader: Uploader, shared_root: Path
) -> None:
    """Over exec the tree goes in one ``rm -rf``; a part of it the login may not remove
    (root's, in a folder root owns) stops it, in rm's own words, not silently."""
    tree = shared_root / "work" / "3.14.0"
    (tree / "locked").mkdir(parents=True)
    (tree / "locked" / "a.tgz").write_text("a")
    os.chown(shared_root / "work", uploader.uid, uploader.gid)
    os.chown(tree, uploader.uid, uploader.gid)  # the tree is the login's, "locked" is root's
    storage = as_uploader(sshd, uploader, shared_root / "staging", shared_root / "public")
    try:
        with pytest.raises(StorageError) as stopped:
            on_fs(storage, lambda fs: fs.remove_tree(str(tree)))
    finally:
        storage.close()

    assert str(stopped.value) == (
        f"Cannot remove {tree} on [127.0.0.1]:{sshd.port}: "
        f"rm: cannot remove '{tree / 'locked' / 'a.tgz'}': Permission denied."
    )
    assert (tree / "locked" / "a.tgz").exists()


def test_a_small_file_is_written_whole_over_the_last_one_each_a_write_request(
    fs_storage: SftpStorage, tmp_path: Path
) -> None:
    record = str(tmp_path / "record.json")

    def twice(fs: SftpFs) -> None:
        fs.write_small(record, b"the first freeze")
        fs.write_small(record, b"the second")

    on_fs(fs_storage, twice)

    assert Path(record).read_bytes() == b"the second"
    assert sorted(os.listdir(tmp_path)) == ["record.json"]  # no temporary name left
    assert fs_storage.requests["write"] == 2
