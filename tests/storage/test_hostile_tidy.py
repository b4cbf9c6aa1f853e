"""Tidy never follows a link at any level of staging, never removes a file it did not copy,
and what it cannot remove is one line to the channel, never a stop; the server-side copy
cannot be made to copy a folder swapped in for a staged file. Tried from outside: the real
uploader account (tests/uploader.py) races the bot with ``renameat2(RENAME_EXCHANGE)``
(tests/storage/uploader_swaps.py), on local folders and over the real sshd."""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import pwd
import struct
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.errors import StorageError
from bot.ports import Left, Storage
from bot.ports.messages import ChannelKind
from bot.storage.local import LocalStorage
from bot.storage.primitives import Copied, CopyJob
from bot.storage.remote_copy import OPEN_SECONDS
from bot.storage.sftp import SftpStorage
from tests.conftest import World
from tests.machine_lock import machine_lock
from tests.sshd import SshServer
from tests.storage.conftest import Backend, on_fs, plan_for, publish, sftp_storage
from tests.storage.uploader_swaps import IN_NONBLOCK, libc
from tests.uploader import Uploader

IN_CREATE = 0x100
IN_ISDIR = 0x40000000

SWAPS = Path(__file__).with_name("uploader_swaps.py")
TRIES = 50
DOCS = [f"docs/{name}.html" for name in ("index", "a", "b", "c", "d", "e", "f")]


class Swapper:
    """The uploader's racing program (see uploader_swaps.py), driven line by line."""

    def __init__(self, uploader: Uploader) -> None:
        self.process = uploader.start(f"exec python3 -u {SWAPS}")

    def send(self, *fields: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\t".join(fields) + "\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "armed"

    def result(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


@pytest.fixture
def swapper(uploader: Uploader) -> Iterator[Swapper]:
    swapper = Swapper(uploader)
    yield swapper
    swapper.stop()


def release_files(tag: str) -> list[str]:
    return [f"Python-{tag}.tgz", f"python-{tag}-amd64.exe", f"Python-{tag}.tar.xz", *DOCS]


def stage(team: Backend, who: Uploader, tag: str) -> list[str]:
    """The uploader's files of ``tag`` (its folders, as an upload makes them)."""
    paths = release_files(tag)
    for path in paths:
        team.write(tag, path, f"{path} of {tag}")
    subprocess.run(["chown", "-R", f"{who.uid}:{who.gid}", str(team.staging)], check=True)
    return paths


def link_as(who: Uploader, link: Path, target: Path) -> None:
    link.symlink_to(target)
    os.lchown(link, who.uid, who.gid)


def team_in(root: Path, kind: str, request: pytest.FixtureRequest) -> tuple[Backend, Storage]:
    staging, public = root / "staging", root / "public"
    staging.mkdir()
    public.mkdir()
    team = Backend(kind, staging, public, lambda: None, lambda k: None)  # type: ignore[arg-type,return-value]
    if kind == "local":
        return team, LocalStorage(staging, public)
    storage = sftp_storage(request.getfixturevalue("sshd"), staging, public)
    request.addfinalizer(storage.close)
    return team, storage


def race(
    root: Path,
    uploader: Uploader,
    swapper: Swapper,
    kind: str,
    request: pytest.FixtureRequest,
    level: str,
) -> tuple[list[dict[str, str]], list[str]]:
    """``TRIES`` tidies, each raced by the uploader exchanging ``level`` (``docs``:
    ``staging/TAG/docs``; ``release``: ``staging/TAG``) with a link to the public folder
    that holds files of the same names: on the bot's first removal there (inotify), a few
    microseconds later, or at a time. Checks that no public file is touched; returns what
    each tidy left (path: why) and what each swap said.

    Locally each try is a whole publish and ``tidy``. Over SFTP a publish costs a second
    or more of round trips, too slow for fifty: the releases are staged and published up
    front, their originals' stamps and folders' identities taken with the freeze's own
    calls, and each try is the backend's removal (``remove_staged``: one command)."""
    team, storage = team_in(root, kind, request)
    slow = 20_000 if kind == "sftp" else 1_000  # microseconds a tidy takes, about
    tags = [f"3.14.{n}" for n in range(TRIES)]
    if isinstance(storage, SftpStorage):
        tidies = published_over(storage, team, tags, uploader)
    left, swaps = [], []
    for n, tag in enumerate(tags):
        if isinstance(storage, SftpStorage):
            tidy = tidies[tag]
        else:
            stage(team, uploader, tag)
            plan = plan_for(team, tag, release_files(tag))
            assert publish(storage, plan).problems == ()
            tidy = functools.partial(whys, storage, plan)
        public = team.public_files()
        release = team.staging / tag
        if level == "docs":
            a, b = release / "docs", release / "docs-link"
            link_as(uploader, b, team.public / "doc" / tag)
        else:
            a, b = release, team.staging / f"{tag}-link"
            link_as(uploader, b, team.public / tag)
        watch = ["-", str(release), str(a)][n % 3]
        # After a removal, the next one's look and removal take about a millisecond over
        # SFTP (a process each), a few microseconds here.
        delay = (n * 7919) % slow if watch == "-" else (n * 397) % (slow // 8)
        swapper.send("swap", watch, str(delay), str(a), str(b))
        left.append(tidy())
        swaps.append(swapper.result())
        assert team.public_files() == public, f"try {n}: a public file was touched"
    return left, swaps


def whys(storage: Storage, plan: PublishPlan) -> dict[str, str]:
    """The tidy: what it left, and why."""
    return {p: p.why if isinstance(p, Left) else "?" for p in storage.tidy(plan)}


def published_over(
    storage: SftpStorage, team: Backend, tags: list[str], uploader: Uploader
) -> dict[str, Callable[[], dict[str, str]]]:
    """``tags`` staged by the uploader and public, their originals' stamps and folders'
    identities as the freeze takes them; for each, the tidy's removal over SFTP."""
    plans = {}
    for tag in tags:
        stage(team, uploader, tag)
        plans[tag] = plan = plan_for(team, tag, release_files(tag))
        for f in plan.files:
            target = team.public / f.target
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((team.staging / tag / f.path).read_bytes())
            target.chmod(0o444)
    staging = str(team.staging)
    paths = [f"{tag}/{f.path}" for tag, plan in plans.items() for f in plan.files]
    stamps = on_fs(storage, lambda fs: fs.stamps([f"{staging}/{p}" for p in paths]))
    folders = [*tags, *(f"{tag}/docs" for tag in tags)]
    ids = on_fs(storage, lambda fs: fs.folder_ids(staging, folders))
    assert set(ids) == set(folders)

    def tidy(tag: str) -> dict[str, str]:
        files = {p: stamps[f"{staging}/{p}"] for p in paths if p.startswith(f"{tag}/")}
        known = {f: i for f, i in ids.items() if f.split("/")[0] == tag}
        return on_fs(storage, lambda fs: fs.remove_staged(staging, files, known))  # type: ignore[arg-type]

    return {tag: functools.partial(tidy, tag) for tag in tags}


@pytest.mark.parametrize("kind", ["local", "sftp"])
@pytest.mark.parametrize("level", ["docs", "release"])
def test_a_staging_folder_exchanged_for_a_link_to_public_at_the_tidy_touches_no_public_file(
    shared_root: Path,
    uploader: Uploader,
    swapper: Swapper,
    kind: str,
    level: str,
    request: pytest.FixtureRequest,
) -> None:
    left, swaps = race(shared_root, uploader, swapper, kind, request, level)

    # The uploader did race (fewer races land on a machine busy with the other test workers).
    assert swaps.count("swapped") >= TRIES // 10, swaps
    # Some swaps came before the tidy entered the folder: its files were left, and why.
    refused = [why for tried in left for why in tried.values()]
    assert any(why.startswith("folder ") for why in refused), left
    assert all(why.startswith("folder ") for why in refused), left


def test_a_folder_reached_through_a_link_is_named_and_its_files_left(
    shared_root: Path, uploader: Uploader, request: pytest.FixtureRequest
) -> None:
    team, storage = team_in(shared_root, "local", request)
    stage(team, uploader, "3.14.1")
    plan = plan_for(team, "3.14.1", release_files("3.14.1"))
    assert publish(storage, plan).problems == ()
    docs = team.staging / "3.14.1" / "docs"
    docs.rename(docs.with_name("elsewhere"))
    link_as(uploader, docs, docs.with_name("elsewhere"))  # the same files, through a link

    left = storage.tidy(plan)

    assert left == sorted(DOCS)
    assert {p.why for p in left if isinstance(p, Left)} == {"folder docs"}
    assert docs.is_symlink()
    assert sorted(team.staged_files("3.14.1")) == sorted(f"elsewhere/{p[5:]}" for p in DOCS)


# -- what the tidy cannot remove: one line, never a stop ----------------------------------------

BOT = "relbot-test-bot"


def bot_account(sshd: SshServer | None = None) -> pwd.struct_passwd:
    """A second non-root account, the bot's own (as on python.org): it can read the
    uploaders' files but not remove them from their folders. With ``sshd``: it logs in
    there with the test client's key (sshd reads a user's keys as that user)."""
    with machine_lock("accounts"):
        account = _account()
        if sshd is not None:
            # Added, not written over: each test worker's sshd has a client key of its own.
            ssh = Path(account.pw_dir) / ".ssh"
            ssh.mkdir(mode=0o700, exist_ok=True)
            keys = ssh / "authorized_keys"
            known = keys.read_text() if keys.exists() else ""
            key = sshd.client_key.with_suffix(".pub").read_text()
            if key not in known:
                keys.write_text(known + key)
            subprocess.run(["chown", "-R", f"{account.pw_uid}:{account.pw_gid}", ssh], check=True)
    return account


def _account() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(BOT)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--create-home", "--user-group", "--shell", "/bin/sh", BOT],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode not in (0, 9):  # 9: made meanwhile by another test run
            pytest.fail(f"cannot create the bot's account: {made.stderr}", pytrace=False)
        subprocess.run(["usermod", "-p", "*", BOT], check=True, capture_output=True)
        return pwd.getpwnam(BOT)


async def test_files_the_bot_may_not_remove_are_one_line_and_the_release_stays_published(
    shared_root: Path, uploader: Uploader, sshd: SshServer
) -> None:
    bot = bot_account(sshd)
    world = World(shared_root)
    data = world.staging.parent
    world.public.mkdir(parents=True)
    os.chown(data, bot.pw_uid, bot.pw_gid)  # the work folder goes beside public
    os.chown(world.public, bot.pw_uid, bot.pw_gid)
    paths = world.stage("3.14.1")  # then uploaded again by the uploader, umask 022
    source = shared_root / "upload"
    (world.staging / "3.14.1").rename(source)
    subprocess.run(["chmod", "-R", "a+rX", str(source)], check=True)
    os.chown(world.staging, uploader.uid, uploader.gid)
    done = uploader.run(f"umask 022 && cp -R {source} {world.staging / '3.14.1'}")
    assert done.returncode == 0, done.stderr
    world.storage = SftpStorage(  # type: ignore[assignment]
        "127.0.0.1",
        sshd.port,
        BOT,
        sshd.client_key,
        sshd.known_hosts,
        str(world.staging),
        str(world.public),
        connect_timeout=5,
    )
    world.start()
    try:
        await world.ready_all("3.14.1")
        published = await world.say("hugo", await world.plan("3.14.1"))
        status = await world.say("eve", "/status 3.14.1")
    finally:
        world.storage.close()  # type: ignore[attr-defined]

    assert "Published 3.14.1" in published.text, published.text
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert "published by hugo" in status.text, status.text
    [told] = [n for n in world.chat.posts if "left for their uploaders" in n.text]
    assert told.kind is ChannelKind.NOTICE and told.mentions == ("hugo",)
    assert told.text.startswith(
        f"staging/3.14.1: {len(paths)} files left for their uploaders to remove: "
    ), told.text
    assert told.text.endswith(" (Permission denied)"), told.text
    assert sorted(paths)[0] in told.text
    assert not [n for n in world.chat.posts if "stopped at tidy" in n.text]
    assert sorted(world.staged_files("3.14.1")) == sorted(paths)  # all still there


def test_locally_too_a_file_the_bot_may_not_remove_is_left_and_says_why(
    shared_root: Path, uploader: Uploader, request: pytest.FixtureRequest
) -> None:
    """The bot's account (not root) on this machine: the storage runs under its uid."""
    bot = bot_account()
    team, _ = team_in(shared_root, "local", request)
    os.chown(team.public, bot.pw_uid, bot.pw_gid)
    os.chown(shared_root, bot.pw_uid, bot.pw_gid)  # the work folder goes beside public
    paths = stage(team, uploader, "3.14.1")
    plan = plan_for(team, "3.14.1", paths)
    os.setegid(bot.pw_gid)
    os.seteuid(bot.pw_uid)
    try:
        storage = LocalStorage(team.staging, team.public)
        assert publish(storage, plan).problems == ()
        left = storage.tidy(plan)
    finally:
        os.seteuid(0)
        os.setegid(0)

    assert left == sorted(paths)
    assert {p.why for p in left if isinstance(p, Left)} == {"error Permission denied"}


# -- the server-side copy: a folder swapped in costs no copy ------------------------------------


def test_a_folder_exchanged_for_a_staged_file_during_the_copy_is_refused_and_never_copied(
    shared_root: Path, uploader: Uploader, swapper: Swapper, sshd: SshServer
) -> None:
    staging, work = shared_root / "staging", shared_root / "work"
    staging.mkdir()
    work.mkdir(mode=0o700)
    data = os.urandom(64 << 10)
    (staging / "file").write_bytes(data)
    (staging / "folder").mkdir()
    for n in range(20):
        (staging / "folder" / f"inner-{n}").write_bytes(data)
    subprocess.run(["chown", "-R", f"{uploader.uid}:{uploader.gid}", str(staging)], check=True)
    storage = sftp_storage(sshd, staging, shared_root / "public")
    jobs = [
        CopyJob(str(staging / "file"), str(work / f"copy-{n}"), hashlib.sha256(data).hexdigest())
        for n in range(8)
    ]
    copied: list[Copied] = []
    created = Created(work)
    swapper.send("spin", str(staging / "file"), str(staging / "folder"))
    try:
        for _ in range(TRIES // len(jobs) + 1):
            copied += on_fs(storage, lambda fs: fs.copy(jobs))
            assert created.folders() == [], "a folder was copied into the work folder"
            for path in work.iterdir():
                assert not path.is_dir(), "a folder was copied into the work folder"
                assert path.read_bytes() == data
                path.unlink()
    finally:
        assert swapper.process.stdin is not None
        swapper.process.stdin.write("stop\n")
        swapper.process.stdin.flush()
        spun = int(swapper.result())
        storage.close()
        created.close()

    assert spun > 0
    problems = {c.problem for c in copied}
    assert problems <= {"", "is not a regular file", "is missing"}, problems
    assert "is not a regular file" in problems  # the race was run: some copies met the folder
    assert "" in problems


class Created:
    """What is created in a folder, as inotify reports it (``IN_CREATE``)."""

    def __init__(self, folder: Path) -> None:
        self.fd = libc.inotify_init1(IN_NONBLOCK)
        assert self.fd >= 0 and libc.inotify_add_watch(self.fd, bytes(folder), IN_CREATE) >= 0

    def folders(self) -> list[str]:
        """The names of the folders created since the last call."""
        found = []
        try:
            events = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return []
        while events:
            _wd, mask, _cookie, size = struct.unpack_from("iIII", events)
            name = events[16 : 16 + size].rstrip(b"\0").decode()
            if mask & IN_ISDIR:
                found.append(name)
            events = events[16 + size :]
        return found

    def close(self) -> None:
        os.close(self.fd)


def within(seconds: float, call: Callable[[], list[Copied]]) -> list[Copied]:
    """``call()``, failing the test when it has not returned after ``seconds`` (in a daemon
    thread: one blocked for good does not keep the test run from ending)."""
    done: list[list[Copied]] = []
    thread = threading.Thread(target=lambda: done.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"still blocked after {seconds} s"
    return done[0]


def test_a_fifo_exchanged_for_a_staged_file_during_the_copy_never_hangs_it(
    shared_root: Path, uploader: Uploader, swapper: Swapper, sshd: SshServer
) -> None:
    """The uploader exchanges the staged file with a FIFO nobody writes to, again and
    again: a copy that opens the FIFO gives up after ``OPEN_SECONDS`` instead of waiting
    for a writer, and writes nothing."""
    staging, work = shared_root / "staging", shared_root / "work"
    staging.mkdir()
    work.mkdir(mode=0o700)
    data = os.urandom(4096)
    (staging / "file").write_bytes(data)
    os.mkfifo(staging / "fifo")
    subprocess.run(["chown", "-R", f"{uploader.uid}:{uploader.gid}", str(staging)], check=True)
    storage = sftp_storage(sshd, staging, shared_root / "public")
    digest = hashlib.sha256(data).hexdigest()
    jobs = [CopyJob(str(staging / "file"), str(work / f"copy-{n}"), digest) for n in range(4)]
    copied: list[Copied] = []
    swapper.send("spin", str(staging / "file"), str(staging / "fifo"))
    try:
        for _ in range(3):
            copied += within(OPEN_SECONDS + 30, lambda: on_fs(storage, lambda fs: fs.copy(jobs)))
            for path in work.iterdir():
                assert path.read_bytes() == data  # a copy, or nothing at all
                path.unlink()
    finally:
        assert swapper.process.stdin is not None
        swapper.process.stdin.write("stop\n")
        swapper.process.stdin.flush()
        swapper.result()
        # A connection still blocked in a command would block its closing too.
        threading.Thread(target=storage.close, daemon=True).start()

    assert {c.problem for c in copied} <= {"", "is not a regular file"}, copied


class DroppedAtTidy(LocalStorage):
    """A backend whose connection drops while it tidies staging (as SFTP lets it through)."""

    def tidy(self, plan: PublishPlan) -> list[str]:
        raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")


async def test_a_tidy_that_fails_is_one_notice_and_the_publish_is_done(world: World) -> None:
    world.start(DroppedAtTidy(world.staging, world.public))
    world.stage("3.14.1")
    await world.ready_all("3.14.1")

    reply = await world.say("hugo", await world.plan("3.14.1"))

    assert "Published 3.14.1" in reply.text, reply.text
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    notices = [n.text for n in world.chat.posts if n.kind is ChannelKind.NOTICE]
    said = "3.14.1 is published, but staging was left as it is: Connection reset by peer"
    assert notices.count(said) == 1, notices
    assert not [n for n in notices if "stopped at tidy" in n]
    await world.gate.scan()  # never tried again
    assert [n.text for n in world.chat.posts if n.kind is ChannelKind.NOTICE] == notices


def test_a_record_from_before_the_folders_identities_leaves_staging_as_it_is(
    shared_root: Path, uploader: Uploader, request: pytest.FixtureRequest
) -> None:
    """A publish confirmed by a bot that did not record its folders yet (an upgrade between
    the confirmation and the tidy): nothing says which folders the originals came from."""
    team, storage = team_in(shared_root, "local", request)
    plan = plan_for(team, "3.14.1", stage(team, uploader, "3.14.1"))
    assert publish(storage, plan).problems == ()
    record = team.work / "frozen" / "3.14.1" / "sources.json"
    older = json.loads(record.read_bytes())
    del older["folders"]
    record.write_text(json.dumps(older))
    staged = team.staged_files("3.14.1")

    with pytest.raises(StorageError, match="predates the folders' identities, so staging was"):
        storage.tidy(plan)

    assert team.staged_files("3.14.1") == staged
    assert not (team.work / "frozen" / "3.14.1").exists()  # the bot's copies are dropped
