"""A scan's one look at every open release over SFTP (``list_all_staging``): one command on
the server for all of them, each release's listing exactly what ``list_staging`` walks folder
by folder, hostile entries included; where the server runs no commands, each release is
listed on its own as before."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from bot.domain.files import RELEASE_FOLDER, Listing, StagedFile
from bot.domain.tags import ReleaseTag
from bot.storage import remote_list, walk
from bot.storage.sftp import SftpStorage
from tests.conftest import World
from tests.hostile_files import deep_tree_for
from tests.sshd import SshServer
from tests.storage.conftest import as_uploader, sftp_storage
from tests.storage.test_gate_over_sftp import sftp_world
from tests.storage.test_sftp_fs_rules import Reply, garbled
from tests.uploader import Uploader

TAGS = [ReleaseTag.parse(t) for t in ("3.14.1", "3.14.2", "3.14.3", "3.13.9", "3.15.0a1")]


def one_by_one(storage: SftpStorage, tags: list[ReleaseTag]) -> dict[str, Listing | None]:
    return {str(tag): storage.list_staging(tag) for tag in tags}


def without_allocation(listings: Mapping[str, Listing | None]) -> dict[str, Listing | None]:
    """The listings with the bytes on disk forgotten: SFTP's attributes do not carry them,
    the server's ``find`` does (the rest must be the same)."""
    return {
        name: None if found is None else {p: replace(f, allocated=None) for p, f in found.items()}
        for name, found in listings.items()
    }


def at_once(storage: SftpStorage, tags: list[ReleaseTag]) -> Mapping[str, Listing | None]:
    """``list_all_staging``, and what it cost: one command, nothing else."""
    before = Counter(storage.requests)
    found = storage.list_all_staging(tags)
    spent = Counter(storage.requests) - before
    assert spent == {"exec": 1}, (spent, found)
    return found


def hostile_staging(staging: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Every odd thing an uploader can leave, spread over releases."""
    one = staging / "3.14.1"
    (one / "docs" / "a").mkdir(parents=True)
    (one / "Python-3.14.1.tgz").write_bytes(b"tarball")
    (one / "docs" / "a" / "b.html").write_bytes(b"<p>")
    (one / "two\nlines.txt").write_bytes(b"x")
    (one / "with spaces and 'quotes' $(x).txt").write_bytes(b"x")
    (one / os.fsdecode(b"bad\xffname.txt")).write_bytes(b"x")
    (one / os.fsdecode(b"odd\xfefolder")).mkdir()
    (one / os.fsdecode(b"odd\xfefolder") / "inside.txt").write_bytes(b"x")
    (one / "python-3.14.1.exe").symlink_to("/etc/passwd")
    (one / "python-3.14.1-arm64.exe").symlink_to("/dev/zero")
    os.mkfifo(one / "python-3.14.1-amd64.exe")
    (one / "Python-3.14.1.tar.xz").mkdir()  # a folder named like a file
    (one / "Python-3.14.1.tar.xz" / "x").write_bytes(b"x")
    (one / "junk" / "deeper").mkdir(parents=True)  # an empty folder
    (one / "etc").symlink_to("/etc")
    with open(one / "Python-3.14.1.tgz.sigstore", "wb") as f:  # a sparse file
        f.truncate(3 << 30)
    os.link(one / "Python-3.14.1.tgz", tmp_path / "kept-elsewhere.tgz")
    deep_tree_for(request, one / "deep", 60)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Python-3.14.2.tgz").write_bytes(b"x")
    (staging / "3.14.2").symlink_to(elsewhere)  # a release folder that is a link
    (staging / "3.13.9").mkdir()  # an empty release folder
    (staging / "3.15.0a1").write_bytes(b"a file named like a release")
    # 3.14.3: nothing staged


def test_every_hostile_entry_reads_the_same_from_the_one_command(
    sshd: SshServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    hostile_staging(staging, request, tmp_path)
    storage = sftp_storage(sshd, staging, public)
    try:
        storage.list_all_staging(TAGS)  # the connection, and whether it runs commands
        found = at_once(storage, TAGS)
        walked = one_by_one(storage, TAGS)
    finally:
        storage.close()

    assert without_allocation(found) == without_allocation(walked)
    one = found["3.14.1"]
    assert one is not None
    assert "two\\nlines.txt" in one and "bad\\xffname.txt" in one
    assert one["Python-3.14.1.tgz.sigstore"].is_sparse  # the server's blocks say so
    assert one["Python-3.14.1.tgz"].links == 2
    assert found["3.14.3"] is None
    linked = found["3.14.2"]
    assert linked is not None and "symbolic link" in linked[RELEASE_FOLDER].problem


def test_a_release_past_the_entry_budget_is_crowded_the_others_listed(
    sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    for n in range(30):
        path = staging / "3.14.1" / "junk" / f"{n:02d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    (staging / "3.14.2").mkdir()
    (staging / "3.14.2" / "Python-3.14.2.tgz").write_bytes(b"ok")
    public.mkdir()
    monkeypatch.setattr(walk, "MAX_ENTRIES", 20)
    storage = sftp_storage(sshd, staging, public)
    tags = TAGS[:2]
    try:
        storage.list_all_staging(tags)
        before = Counter(storage.requests)
        found = storage.list_all_staging(tags)
        spent = Counter(storage.requests) - before
        walked = one_by_one(storage, tags)
    finally:
        storage.close()

    crowded = found["3.14.1"]
    assert crowded is not None and len(crowded) <= 21
    assert crowded[RELEASE_FOLDER].problem.startswith("holds more than 20 files and folders")
    assert list(found["3.14.2"] or {}) == ["Python-3.14.2.tgz"]
    assert without_allocation(found) == without_allocation(walked)
    assert spent["exec"] == 1  # the crowded release is then walked folder by folder


def test_an_unreadable_folder_reads_the_same_from_the_one_command(
    sshd: SshServer, uploader: Uploader, shared_root: Path
) -> None:
    staging, public = shared_root / "staging", shared_root / "public"
    (staging / "3.14.1" / "amd64").mkdir(parents=True)
    (staging / "3.14.1" / "amd64" / "python.exe").write_bytes(b"x")
    (staging / "3.14.1" / "Python-3.14.1.tgz").write_bytes(b"x")
    (staging / "3.14.2").mkdir()
    (staging / "3.14.2" / "Python-3.14.2.tgz").write_bytes(b"x")
    public.mkdir()
    for folder, dirs, files in os.walk(shared_root):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(name, uploader.uid, uploader.gid)
    (staging / "3.14.1" / "amd64").chmod(0)
    (staging / "3.14.2").chmod(0)  # a whole release folder
    storage = as_uploader(sshd, uploader, staging, public)
    tags = TAGS[:2]
    try:
        storage.list_all_staging(tags)
        found = at_once(storage, tags)
        walked = one_by_one(storage, tags)
    finally:
        storage.close()

    assert without_allocation(found) == without_allocation(walked)
    assert found["3.14.1"] is not None and found["3.14.2"] is not None
    assert {p: f.problem for p, f in found["3.14.1"].items()} == {
        "Python-3.14.1.tgz": "",
        "amd64/": "a folder that cannot be read: Permission denied",
    }
    assert found["3.14.2"][RELEASE_FOLDER].problem == "cannot be read (Permission denied)"


def test_without_commands_each_release_is_listed_on_its_own(
    sftp_only_sshd: SshServer, tmp_path: Path
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    (staging / "3.14.1").mkdir(parents=True)
    (staging / "3.14.1" / "Python-3.14.1.tgz").write_bytes(b"x")
    public.mkdir()
    storage = sftp_storage(sftp_only_sshd, staging, public)
    try:
        storage.list_all_staging(TAGS)
        before = Counter(storage.requests)
        assert storage.list_all_staging(TAGS) == {}
        assert Counter(storage.requests) - before == {}  # nothing tried: no command runs
    finally:
        storage.close()


# -- the scan over the real gate --------------------------------------------------------------

FIVE = ["3.14.1", "3.13.10", "3.12.12", "3.15.0a3", "3.14.2rc1"]


def five_releases(world: World) -> None:
    """Five releases staged at once, ~60 files each (every required file, docs pages)."""
    for tag in FIVE:
        written = world.stage(tag)
        for n in range(60 - len(written)):
            world.write(tag, f"docs/page-{n:02d}.html", f"page {n} of {tag}")
    for folder, _dirs, files in os.walk(world.staging):  # the same listing in every world
        for name in files:
            os.utime(os.path.join(folder, name), (1_700_000_000, 1_700_000_000))


class OneByOne(SftpStorage):
    """The scan as it was: every release listed on its own."""

    def list_all_staging(
        self, tags: Sequence[ReleaseTag]
    ) -> dict[str, dict[str, StagedFile] | None]:
        return {}


def steady_scan(world: World) -> tuple[Counter[str], dict[str, Listing | None]]:
    """The round trips of a scan after the first two (the connection, the hashes), and what
    it listed of each release."""
    storage = world.storage
    assert isinstance(storage, SftpStorage)
    for _ in range(2):
        asyncio.run(world.gate.scan())
    before = Counter(storage.requests)
    asyncio.run(world.gate.scan())
    spent = Counter(storage.requests) - before
    looks = world.gate.looks()  # per release: its name, its listing, ... (7 parts)
    seen = {str(looks[i]): cast("Listing | None", looks[i + 1]) for i in range(0, len(looks), 7)}
    return spent, seen


def test_a_scan_of_five_releases_of_60_files_costs_two_round_trips(
    sshd: SshServer, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one_look = sftp_world(tmp_path / "a", sshd)
    one_by_one = sftp_world(tmp_path / "b", sshd, OneByOne)
    for world in (one_look, one_by_one):
        five_releases(world)
    try:
        spent, seen = steady_scan(one_look)
        spent_before, seen_before = steady_scan(one_by_one)
    finally:
        one_look.storage.close()  # type: ignore[attr-defined]
        one_by_one.storage.close()  # type: ignore[attr-defined]

    assert spent == {"listdir": 1, "exec": 1}  # staging's listing, one command for all
    # as before: a listing of staging, then an lstat and a listing per folder
    assert spent_before["stat"] == 5 and spent_before["listdir"] > 5
    assert all(listing is not None and len(listing) >= 60 for listing in seen.values())
    assert without_allocation(seen) == without_allocation(seen_before)


def test_without_commands_the_scan_lists_each_release_as_before(
    sftp_only_sshd: SshServer, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one_look = sftp_world(tmp_path / "a", sftp_only_sshd)
    one_by_one = sftp_world(tmp_path / "b", sftp_only_sshd, OneByOne)
    for world in (one_look, one_by_one):
        five_releases(world)
    try:
        spent, seen = steady_scan(one_look)
        spent_before, seen_before = steady_scan(one_by_one)
    finally:
        one_look.storage.close()  # type: ignore[attr-defined]
        one_by_one.storage.close()  # type: ignore[attr-defined]

    assert spent == spent_before and spent["exec"] == 0
    assert seen == seen_before and all(seen.values())
    storage = one_look.storage
    assert isinstance(storage, SftpStorage)
    assert storage.list_all_staging([ReleaseTag.parse(t) for t in FIVE]) == {}  # each alone


# -- what the bot reads of the command's output -----------------------------------------------


def record(kind: str, path: bytes, depth: int, *, flag: str = "-", target: bytes = b"") -> bytes:
    """One entry as the command prints it."""
    header = f"{kind} 644 0 5 8 1700000000.5 1 {depth} {flag}".encode()
    return header + b"\0" + path + b"\0" + target + b"\0"


def test_names_that_look_like_records_are_read_by_position() -> None:
    out = (
        b"+\0"
        + record("d", b"", 0)
        + record("f", b"0", 1)  # a file named "0", another "+", another "= 0"
        + record("f", b"+", 1)
        + record("f", b"= 0", 1)
        + record("f", b"f 644 0 5 8 1 1 1 -", 1)
        + b"= 0\0"
        + b"0\0"
    )
    trees = remote_list.parse(out, ["3.14.1", "3.14.2"])
    assert trees["3.14.2"].kind == "absent"
    names = [d.name for d in trees["3.14.1"].folders[""]]
    assert names == ["0", "+", "= 0", "f 644 0 5 8 1 1 1 -"]
    assert trees["3.14.1"].folders[""][0].mtime == 1700000000.0  # whole seconds, as SFTP


@pytest.mark.parametrize(
    "out",
    [
        b"",  # nothing at all
        b"+\0" + record("d", b"", 0) + b"= 0",  # not ended by a NUL
        b"+\0" + record("d", b"", 0)[:-1],  # an entry cut short
        b"+\0" + b"d 644 0\0\0\0= 0\0",  # a header with too few fields
        b"+\0" + b"d 755 root 0 0 1 2 0 -\0\0\0= 0\0",  # an owner that is not a number
        b"+\0" + record("d", b"x", 0) + b"= 0\0",  # the folder's own record missing
        b"+\0" + record("d", b"", 0) + record("f", b"a/b", 1) + b"= 0\0",  # a/b at depth 1
        b"+\0" + record("d", b"", 0) + record("f", b"a/b", 2) + b"= 0\0",  # no folder a
        b"+\0" + record("d", b"", 0) + b"= 0\0" + b"0\0",  # more than asked
    ],
)
def test_output_not_of_the_expected_form_is_refused_whole(out: bytes) -> None:
    with pytest.raises(ValueError):
        remote_list.parse(out, ["3.14.1"])


def test_a_release_find_failed_on_or_cut_at_the_budget_is_left_to_the_walk() -> None:
    failed = b"+\0" + record("d", b"", 0) + record("f", b"a", 1) + b"= 1\0"
    cut = b"+\0" + record("d", b"", 0) + record("f", b"a", 1)  # no status: head cut it
    gone = b"+\0= 1\0"  # not even the folder: removed meanwhile
    trees = remote_list.parse(failed + cut + gone, ["3.14.1", "3.14.2", "3.14.3"])
    assert trees == {}


def test_output_past_what_the_bot_reads_leaves_every_release_to_the_walk(
    sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    (staging / "3.14.1").mkdir(parents=True)
    public.mkdir()
    for n in range(200):
        (staging / "3.14.1" / f"{'x' * 200}-{n}").write_bytes(b"x")
    monkeypatch.setattr(remote_list, "_ENTRY_BYTES", 1)  # a few bytes per entry of the budget
    monkeypatch.setattr(walk, "MAX_ENTRIES", 1000)
    storage = sftp_storage(sshd, staging, public)
    try:
        storage.list_all_staging(TAGS[:1])
        assert storage.list_all_staging(TAGS[:1]) == {}  # each release listed on its own
        assert storage.list_staging(TAGS[0]) is not None  # the connection still serves
    finally:
        storage.close()


def hostile_releases(world: World) -> None:
    """What test_hostile_staging.py puts in staging, in two releases and a link to a third."""
    world.stage("3.14.1")
    folder = world.staging / "3.14.1"
    (folder / "x\n[#release] 3.14.1 is published: 19 files, confirmed by hugo.").write_bytes(b"x")
    (folder / os.fsdecode(b"bad\xffname.txt")).write_bytes(b"x")
    (folder / "python-3.14.1.exe").unlink()
    (folder / "python-3.14.1.exe").symlink_to("/etc/passwd")
    (folder / "python-3.14.1-amd64.exe").unlink()
    os.mkfifo(folder / "python-3.14.1-amd64.exe")
    (folder / "Python-3.14.1.tgz").unlink()
    (folder / "Python-3.14.1.tgz" / "x").mkdir(parents=True)  # a folder named like a file
    (folder / "junkdir" / "deeper").mkdir(parents=True)
    elsewhere = world.root / "elsewhere"
    world.stage("3.14.2")
    os.rename(world.staging / "3.14.2", elsewhere)
    (world.staging / "3.14.2").symlink_to(elsewhere, target_is_directory=True)


def test_hostile_staging_reads_the_same_in_the_channel_through_the_one_look(
    sshd: SshServer, tmp_path: Path
) -> None:
    texts: list[str] = []
    listings: list[int] = []
    for name, cls in (("one-look", SftpStorage), ("one-by-one", OneByOne)):
        (tmp_path / name).mkdir()
        world = sftp_world(tmp_path / name, sshd, cls)
        hostile_releases(world)
        storage = world.storage
        assert isinstance(storage, SftpStorage)
        try:
            asyncio.run(world.gate.scan())
            listings.append(storage.requests["listdir"])
            status = asyncio.run(world.say("eve", "/status 3.14.1"))
            linked = asyncio.run(world.say("eve", "/status 3.14.2"))
        finally:
            storage.close()
        posted = [m.text for m in world.chat.posts] + [m.text for _, m in world.chat.updates]
        texts.append("\n".join([*posted, status.text, linked.text]))
        assert "symbolic link" in linked.text and "x\\n[#release]" in status.text
        assert not any(line.startswith("[#release]") for line in texts[-1].splitlines())
    assert listings[0] == 1 < listings[1]  # the scan's look: staging's listing, one command
    one_look, one_by_one = texts
    assert one_look.replace(str(tmp_path / "one-look"), "ROOT") == one_by_one.replace(
        str(tmp_path / "one-by-one"), "ROOT"
    )


class HeldLook(SftpStorage):
    """The scan's one look, held once taken until ``hold`` is set (a command comes first)."""

    looked = threading.Event()
    hold = threading.Event()

    def list_all_staging(
        self, tags: Sequence[ReleaseTag]
    ) -> dict[str, dict[str, StagedFile] | None]:
        found = super().list_all_staging(tags)
        self.looked.set()
        self.hold.wait(30)
        return found


async def test_a_command_during_the_scan_leaves_its_release_listed_afresh_not_from_the_look(
    sshd: SshServer, tmp_path: Path
) -> None:
    world = sftp_world(tmp_path, sshd, HeldLook)
    storage = world.storage
    assert isinstance(storage, HeldLook)
    storage.looked, storage.hold = threading.Event(), threading.Event()
    world.stage("3.14.1")
    try:
        storage.hold.set()
        await world.gate.scan()
        storage.hold.clear()
        storage.looked.clear()
        scan = asyncio.create_task(world.gate.scan())
        assert await asyncio.to_thread(storage.looked.wait, 30)
        reply = await world.say("hugo", "/ready source 3.14.1")  # after the look, first
        world.write("3.14.1", "late.txt", "staged after the look")
        storage.hold.set()
        await scan
    finally:
        storage.hold.set()
        storage.close()

    assert "late.txt" not in reply.text
    looks = world.gate.looks()
    listing = cast("Listing", looks[looks.index("3.14.1") + 1])
    assert "late.txt" in listing  # the scan listed it again: the look was older than /ready


@pytest.mark.parametrize(
    "change",
    [
        lambda r: (r[0], r[1][:-7], r[2]),  # a reply cut short
        lambda r: (1, r[1], b"sh: 1: find: not found"),  # a shell that failed
        lambda r: (0, b"greetings from the login script\n" + r[1], r[2]),
    ],
    ids=["cut-short", "failed", "noise"],
)
def test_a_reply_the_bot_cannot_trust_leaves_every_release_to_the_walk(
    sshd: SshServer, tmp_path: Path, change: Callable[[Reply], Reply]
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    (staging / "3.14.1" / "docs").mkdir(parents=True)
    (staging / "3.14.1" / "docs" / "index.html").write_bytes(b"x")
    public.mkdir()
    storage = sftp_storage(sshd, staging, public)
    try:
        assert set(storage.list_all_staging(TAGS[:1])) == {"3.14.1"}
        garbled(storage, "export LC_ALL=C; cd -- ", change)
        assert storage.list_all_staging(TAGS[:1]) == {}  # the scan lists each on its own
    finally:
        storage.close()
