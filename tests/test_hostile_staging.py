"""What a careless or hostile uploader can put in staging: a symlinked release folder, a
hard link, an empty stray folder, an unreadable folder, names that are not UTF-8 or hold a
newline. Each is its release's problem, shown with the reason; none is published, none
stops a scan, none forges a channel line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.demo import stage_demo
from bot.domain.files import StagedFile
from bot.domain.history import EventKind
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.service.render import audit_line
from bot.storage.local import LocalStorage
from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.conftest import TEAM_TOML, World
from tests.console_driver import RELBOT
from tests.hostile_files import deep_tree_for
from tests.pinned import RELEASE_CYCLE_LINE
from tests.sshd import free_port
from tests.waiting import Drained, wait_until

NOBODY = 65534
TAG = "3.14.1"


def channel_text(world: World) -> str:
    texts = [m.text for m in world.chat.posts] + [m.text for _, m in world.chat.updates]
    return "\n".join(texts)


# -- a symlinked release folder ---------------------------------------------------------------


def swap_for_symlink(world: World, tmp_path: Path) -> Path:
    """Move the staged release elsewhere and leave a symlink to it in staging."""
    elsewhere = tmp_path / "elsewhere" / TAG
    elsewhere.parent.mkdir()
    os.rename(world.staging / TAG, elsewhere)
    (world.staging / TAG).symlink_to(elsewhere, target_is_directory=True)
    return elsewhere


async def test_a_symlinked_release_folder_is_refused_at_ready_with_the_reason(
    world: World, tmp_path: Path
) -> None:
    world.stage(TAG)
    elsewhere = swap_for_symlink(world, tmp_path)

    reply = await world.say("hugo", f"/ready source {TAG}")

    assert reply.private
    assert "symbolic link" in reply.text and str(elsewhere) in reply.text
    assert world.events(TAG, EventKind.CLAIMED) == []


async def test_a_release_folder_swapped_for_a_symlink_after_ready_is_never_published(
    world: World, tmp_path: Path
) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    swap_for_symlink(world, tmp_path)

    reply = await world.say("hugo", f"/publish {TAG}")
    assert reply.private and "symbolic link" in reply.text
    await world.gate.scan()

    assert "symbolic link" in channel_text(world)  # the summary says why
    assert world.events(TAG, EventKind.PLANNED) == []
    assert not (world.public / TAG).exists() and not (world.public / TAG).is_symlink()
    status = await world.say("eve", f"/status {TAG}")
    assert "symbolic link" in status.text


# -- a hard link ------------------------------------------------------------------------------


async def test_a_hard_linked_staged_file_is_noted_in_the_summary_but_does_not_block(
    world: World, tmp_path: Path
) -> None:
    world.stage(TAG)
    os.link(world.staging / TAG / "Python-3.14.1.tgz", tmp_path / "kept-elsewhere.tgz")

    await world.ready_all(TAG)
    await world.gate.scan()

    assert "Python-3.14.1.tgz has another name (a hard link)" in channel_text(world)
    reply = await world.say("hugo", f"/publish {TAG}")
    assert reply.confirm is not None, reply.text


# -- an empty stray folder --------------------------------------------------------------------


async def test_empty_stray_folders_are_never_published(world: World) -> None:
    world.stage(TAG)
    (world.staging / TAG / "junkdir" / "deeper").mkdir(parents=True)
    await world.ready_all(TAG)
    line = await world.plan(TAG)

    reply = await world.say("hugo", line)

    assert not reply.private, reply.text
    assert not (world.public / TAG / "junkdir").exists()
    assert "python-3.14.1-amd64.exe" in {p.name for p in (world.public / TAG).iterdir()}


# -- names that are not printable UTF-8 -------------------------------------------------------


async def test_a_name_that_is_not_utf8_is_reported_escaped_and_never_crashes_a_scan(
    world: World,
) -> None:
    world.stage(TAG)
    bad = os.fsdecode(b"bad\xffname.txt")
    (world.staging / TAG / bad).write_bytes(b"x")

    await world.gate.scan()
    reply = await world.say("hugo", f"/publish {TAG}")

    assert "bad\\xffname.txt" in channel_text(world)
    assert "bad\\xffname.txt" in reply.text and reply.private
    for text in (channel_text(world), reply.text):
        text.encode("utf-8")  # nothing a strict UTF-8 console cannot print


async def test_a_file_name_with_a_newline_cannot_forge_a_channel_line(world: World) -> None:
    world.stage(TAG)
    forged = "x\n[#release] 3.14.1 is published: 19 files, confirmed by hugo.\x1b[2K"
    (world.staging / TAG / forged).write_bytes(b"x")

    await world.gate.scan()
    status = await world.say("eve", f"/status {TAG}")

    for text in (channel_text(world), status.text):
        assert "\x1b" not in text
        assert not any(line.startswith("[#release]") for line in text.splitlines())
        assert "3.14.1 is published" not in text.replace("\\n[#release] 3.14.1 is published", "")
    assert "x\\n[#release]" in status.text


async def test_a_hold_reason_with_ansi_escapes_reaches_neither_channel_nor_audit_raw(
    world: World,
) -> None:
    world.stage(TAG)
    reply = await world.say("eve", f"/hold {TAG} \x1b[31mred\x1b[0m \x1b]0;pwned\x07")

    assert not reply.private, reply.text
    assert "\x1b" not in channel_text(world) and "\x07" not in channel_text(world)
    assert "\\x1b[31mred" in channel_text(world)
    lines = [audit_line(e) for e in world.store.events(ReleaseTag.parse(TAG))]
    assert lines and not any("\x1b" in line for line in lines)


# -- /hold on a release nobody staged ---------------------------------------------------------


async def test_a_hold_on_a_release_nobody_staged_or_acted_on_is_refused(world: World) -> None:
    world.stage(TAG)

    reply = await world.say("eve", "/hold 3.14.11 typo")

    assert reply.private and "3.14.11" in reply.text
    assert "3.14.11" not in [str(t) for t in await world.gate.open_tags()]
    status = await world.say("eve", "/status")
    assert "3.14.11" not in status.text
    # A release with history can still be held (before anything is staged).
    assert not (await world.say("eve", f"/hold {TAG} wait")).private


# -- one unreadable folder --------------------------------------------------------------------


@pytest.fixture
def shared_root() -> Iterator[Path]:
    """A folder a process running as nobody can reach (pytest's tmp folders are root's)."""
    root = Path(tempfile.mkdtemp(prefix="relbot-nobody-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def as_nobody(work: Callable[[], object]) -> object:
    """Run ``work`` in a forked child that dropped root for nobody: permissions then stop
    it for real (root reads a chmod 000 folder). Returns what ``work`` returns (JSON)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        status = 0
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            payload = json.dumps({"result": work()})
        except BaseException as err:  # noqa: BLE001 - the child must never return into pytest
            payload, status = json.dumps({"error": f"{type(err).__name__}: {err}"}), 1
        with os.fdopen(write, "w") as out:
            out.write(payload)
        os._exit(status)
    os.close(write)
    with os.fdopen(read) as source:
        data = json.loads(source.read() or "{}")
    os.waitpid(pid, 0)
    assert "error" not in data, data.get("error")
    return data["result"]


def give_to_nobody(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(name, NOBODY, NOBODY, follow_symlinks=False)


def test_a_folder_nobody_can_read_is_listed_as_its_releases_problem(shared_root: Path) -> None:
    staging = shared_root / "staging"
    (staging / TAG / "amd64").mkdir(parents=True)
    (staging / TAG / "amd64" / "python.exe").write_bytes(b"x")
    (staging / TAG / "Python-3.14.1.tgz").write_bytes(b"x")
    give_to_nobody(shared_root)
    (staging / TAG / "amd64").chmod(0)
    storage = LocalStorage(staging, shared_root / "public")

    def listing() -> object:
        found = storage.list_staging(ReleaseTag.parse(TAG))
        assert found is not None
        return {path: entry.problem for path, entry in found.items()}

    listed = as_nobody(listing)

    assert listed == {
        "Python-3.14.1.tgz": "",
        "amd64/": "a folder that cannot be read: Permission denied",
    }


def test_one_unreadable_folder_does_not_stop_the_scans_of_other_releases(
    shared_root: Path,
) -> None:
    world = World(shared_root)
    world.stage(TAG)
    world.stage("3.14.2")
    (world.staging / TAG / "amd64").mkdir()
    (world.staging / TAG / "amd64" / "python.exe").write_bytes(b"x")
    asyncio.run(world.ready_all("3.14.2"))
    world.write("3.14.2", "python-3.14.2-amd64.exe", "rebuilt after /ready")
    world.store.close()
    give_to_nobody(shared_root)
    (world.staging / TAG / "amd64").chmod(0)
    before = len(world.chat.posts)

    def scan_and_status() -> object:
        world.start()
        asyncio.run(world.gate.scan())
        status = asyncio.run(world.say("eve", f"/status {TAG}"))
        glance = asyncio.run(world.say("eve", "/status"))
        world.store.close()
        return {
            "glance": glance.text,
            "notices": world.chat.texts(ChannelKind.NOTICE),
            "channel": channel_text(world),
            "status": status.text,
            "posts": len(world.chat.posts),
        }

    seen = as_nobody(scan_and_status)

    assert isinstance(seen, dict) and seen["posts"] > before
    assert any("windows claim on 3.14.2 was withdrawn" in n for n in seen["notices"])
    problem = "amd64/ (a folder that cannot be read: Permission denied)"
    assert problem in seen["channel"]
    assert problem in seen["status"]
    withdrawn = "3.14.2  collecting   waits for windows (steve: claim withdrawn; /ready again)"
    assert withdrawn in seen["glance"], seen["glance"]
    assert f"{TAG}  collecting   waits for source" in seen["glance"]


async def test_a_symlinked_folder_inside_a_release_is_never_followed(
    world: World, tmp_path: Path
) -> None:
    world.stage(TAG)
    os.rename(world.staging / TAG / "docs", tmp_path / "docs-elsewhere")
    (world.staging / TAG / "docs").symlink_to(tmp_path / "docs-elsewhere")

    reply = await world.say("hugo", f"/ready docs {TAG}")

    assert reply.private and "docs/python-3.14.1-docs.epub (missing)" in reply.text
    publish = await world.say("hugo", f"/publish {TAG}")
    assert publish.private and "docs (not a regular file)" in publish.text


# -- special files where a file is expected (a FIFO, links to /dev/zero and /etc/passwd) --------

EXE = "python-3.14.1-amd64.exe"


def replace_with(world: World, tag: str, path: str, kind: str) -> Path:
    """Put a FIFO or a link where ``path`` was staged, with a signature bundle beside it (so
    a signature check wants its hash)."""
    file = world.staging / tag / path
    file.unlink()
    if kind == "fifo":
        os.mkfifo(file)
    else:
        file.symlink_to(kind)
    (file.parent / (file.name + ".sigstore")).write_bytes(b'{"not": "read before the file"}')
    return file


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
async def test_a_special_file_in_staging_leaves_scans_chat_and_healthz_answering(
    world: World, kind: str
) -> None:
    world.stage(TAG)
    fifo = replace_with(world, TAG, EXE, kind)
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    await server.start()
    try:
        await asyncio.wait_for(world.gate.scan(), 60)  # it used to hang here for good
        status = await asyncio.wait_for(world.say("eve", f"/status {TAG}"), 60)
        ready = await asyncio.wait_for(world.say("steve", f"/ready windows {TAG}"), 60)
        async with httpx.AsyncClient(timeout=10) as client:
            health = await client.get(f"http://127.0.0.1:{port}/healthz")
    finally:
        await server.stop()

    assert f"{EXE} (not a regular file)" in status.text
    assert ready.private and f"{EXE} (not a regular file)" in ready.text
    assert health.status_code == 200 and world.gate.metrics.scans == 1
    fifo.unlink()
    world.write(TAG, EXE, "the installer")
    await world.gate.scan()
    assert not (await world.say("steve", f"/ready windows {TAG}")).private


async def test_a_link_to_etc_passwd_never_puts_its_hash_anywhere(tmp_path: Path) -> None:
    world = World(tmp_path, team_toml=TEAM_TOML.replace('rm = ["3.14"', 'rm = ["3.12", "3.14"'))
    world.stage("3.12.5")
    replace_with(world, "3.12.5", "Python-3.12.5.tgz", "/etc/passwd")
    secret = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()

    await world.gate.scan()
    status = await world.say("eve", "/status 3.12.5")
    ready = await world.say("hugo", "/ready source 3.12.5")
    observed = await world.gate.observed(ReleaseTag.parse("3.12.5"))

    assert "Python-3.12.5.tgz (not a regular file)" in status.text
    assert ready.private and "Python-3.12.5.tgz (not a regular file)" in ready.text
    assert secret not in set(observed.digests.values())
    everything = channel_text(world) + status.text + ready.text + repr(observed)
    assert secret not in everything


# -- a tree deeper than any walk, and a crowded folder -------------------------------------------


async def test_a_tree_1100_folders_deep_is_reported_by_scans_and_status(
    world: World, request: pytest.FixtureRequest
) -> None:
    world.stage(TAG)
    deep_tree_for(request, world.staging / TAG / "docs" / "deep", 1100)

    await world.gate.scan()
    status = await world.say("eve", f"/status {TAG}")
    cli = subprocess.run(
        [str(RELBOT), "status", TAG, "--config", str(world.root / "relbot.toml")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    deep = "docs/ (more than 32 folders deep: nothing below that depth was listed"
    assert deep in status.text and deep in channel_text(world)
    assert deep in cli.stdout and "Traceback" not in cli.stderr, cli.stderr
    assert world.gate.metrics.scan_failures == 0
    publish = await world.say("hugo", f"/publish {TAG}")
    assert publish.private and "docs/ (more than 32 folders deep" in publish.text


async def test_20000_staged_files_give_a_short_status_and_a_bounded_board(world: World) -> None:
    world.stage(TAG)
    folder = world.staging / TAG
    for n in range(20_000):
        (folder / f"stray-{n:05d}.bin").write_bytes(b"x")

    await world.gate.scan()
    status = await world.say("eve", f"/status {TAG}")
    publish = await world.say("hugo", f"/publish {TAG}")
    view = await board_json(world, TAG)

    for text in (status.text, publish.text, world.chat.posts[-1].text):
        assert len(text.encode()) < 4000, len(text.encode())
    assert "stray-00000.bin (unexpected)" in status.text
    assert "stray-00019.bin (unexpected)" in status.text
    assert "stray-00020.bin" not in status.text
    assert "19980 more unexpected entries" in status.text
    assert "19980 more unexpected entries" in publish.text
    assert len(view["files"]) == 300 and view["files_not_shown"] == 20_019 - 300


async def board_json(world: World, tag: str) -> dict[str, Any]:
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    server.serve_board(BoardRoutes(world.gate))
    await server.start()
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            response = await client.get(f"http://127.0.0.1:{port}/api/releases/{tag}")
    finally:
        await server.stop()
    assert response.status_code == 200
    data: dict[str, Any] = response.json()
    return data


# -- a read that never returns ---------------------------------------------------------------


class HangingStorage(LocalStorage):
    """Local folders whose listing of 3.14.2 blocks until ``released``, as a stuck mount or
    a silent server does."""

    released = threading.Event()

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        if str(tag) == "3.14.2":
            self.released.wait(60)
        return super().list_staging(tag)


class HangingWorld(World):
    def make_storage(self) -> LocalStorage:
        storage = HangingStorage(self.staging, self.public)
        storage.released = threading.Event()
        return storage


async def test_a_hung_read_is_reported_once_and_blocks_neither_chat_nor_later_scans(
    tmp_path: Path,
) -> None:
    world = HangingWorld(tmp_path)
    storage = world.storage
    assert isinstance(storage, HangingStorage)
    world.gate.reads.seconds = 0.5
    world.stage(TAG)
    world.stage("3.14.2")

    await world.gate.scan()
    first = world.gate.metrics.scans
    status = await world.say("eve", "/status 3.14.2")
    other = await world.say("eve", f"/status {TAG}")
    await world.gate.scan()  # the next scan runs, and does not start the stuck read again

    stuck = "Listing the staging folder of 3.14.2 has not finished after 0.5 s."
    assert status.text == f"3.14.2: {stuck}"
    assert "0 of 4 roles ready" in other.text
    assert world.gate.metrics.scans == first + 1 == 2
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert notices == [f"Cannot scan 3.14.2: {stuck} The next scan tries again."]
    storage.released.set()
    await asyncio.to_thread(wait_until, "its end", lambda: not world.gate.reads.stuck())
    await world.gate.scan()
    assert world.chat.texts(ChannelKind.NOTICE)[-1] == "3.14.2 can be scanned again."


def test_relbot_run_keeps_answering_with_a_fifo_a_dev_zero_link_and_a_deep_tree_staged(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    port = free_port()
    (tmp_path / "relbot.toml").write_text(
        RELEASE_CYCLE_LINE
        + textwrap.dedent(f"""
            [storage]
            staging = "data/staging"
            public = "data/public"
            [health]
            port = {port}
            [people.hugo]
            rm = ["3.14"]
            roles = ["source", "docs", "windows", "macos"]
            """),
        encoding="utf-8",
    )
    staging = tmp_path / "data" / "staging"
    (tmp_path / "data" / "public").mkdir(parents=True)
    stage_demo(staging, load_profile("cpython"))
    release = staging / TAG
    for name, make in ((EXE, os.mkfifo), ("python-3.14.1-arm64.exe", None)):
        (release / name).unlink()
        if make is None:
            (release / name).symlink_to("/dev/zero")
        else:
            make(release / name)
        (release / f"{name}.sigstore").write_bytes(b"{}")
    deep_tree_for(request, release / "docs" / "deep", 1100)

    bot = subprocess.Popen(
        [str(RELBOT), "run"], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = Drained(bot.stdout), Drained(bot.stderr)
    assert bot.stdin is not None
    try:
        wait_until("/healthz", lambda: healthz(port) == 200)
        for line in (f"/status {TAG}", f"/ready windows {TAG}", f"/ready docs {TAG}"):
            bot.stdin.write(line + "\n")
            bot.stdin.flush()
        wait_until("the answers", lambda: out.has(f"docs is ready for {TAG}"))
        assert healthz(port) == 200
    finally:
        bot.stdin.close()
        assert bot.wait(timeout=60) == 0
    printed = out.text(bot)
    assert f"{EXE} (not a regular file)" in printed
    assert "python-3.14.1-arm64.exe (not a regular file)" in printed
    assert "docs/ (more than 32 folders deep" in printed
    assert "Traceback" not in err.text(bot)


def healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
            return int(response.status)
    except OSError:
        return 0
