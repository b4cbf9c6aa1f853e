"""No uploader can stall or blind the bot before the publish: a file that cannot be the
artifact (a 100 GB sparse file, one larger than the profile allows, a 50 MB "bundle", a folder
named like a file) is named once, as the one problem of its role, with what to do; every other
role and release stays shown, scans go on, and hashing never holds a command or a scan."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.storage import walk
from bot.storage.local import LocalStorage
from bot.web.health import HealthServer
from tests.conftest import World
from tests.mounts import tmpfs
from tests.sshd import free_port
from tests.test_hostile_staging import board_json, channel_text

TAG = "3.14.1"
OTHER = "3.14.2"
TARBALL = "Python-3.14.1.tar.xz"
BUNDLE = "Python-3.14.1.tgz.sigstore"
REDO = "remove it and upload the real file"
ROLES = ("source", "docs", "windows", "macos")


def sparse(path: Path, size: str) -> Path:
    """A file of ``size`` that takes no disk (``truncate``, as an uploader would)."""
    path.unlink(missing_ok=True)
    subprocess.run(["truncate", "-s", size, str(path)], check=True)
    return path


def role_lines(text: str, tag: str = TAG) -> list[str]:
    """The role lines of ``tag``'s summary in a ``/status`` answer."""
    block = text.split(f"{tag}: ", 1)[1].split("\n3.14.", 1)[0]
    return [line.split()[0] for line in block.splitlines()[1:] if line.split()[0] in ROLES]


async def healthz(world: World) -> int:
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    await server.start()
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.get(f"http://127.0.0.1:{port}/healthz")
    finally:
        await server.stop()
    return response.status_code


# -- a file that cannot be the artifact ------------------------------------------------------


async def test_a_sparse_100_gb_tarball_is_named_once_with_what_to_do_and_hides_nothing(
    world: World,
) -> None:
    world.stage(TAG)
    world.stage(OTHER)
    sparse(world.staging / TAG / TARBALL, "100G")

    await asyncio.wait_for(world.gate.scan(), 60)
    status = await asyncio.wait_for(world.say("eve", f"/status {TAG}"), 60)
    glance = await asyncio.wait_for(world.say("eve", "/status"), 60)
    ready = await asyncio.wait_for(world.say("hugo", f"/ready source {TAG}"), 60)
    windows = await asyncio.wait_for(world.say("steve", f"/ready windows {TAG}"), 60)

    named = f"{TARBALL} (107.4 GB, more than the 4.3 GB such a file may be; {REDO})"
    assert status.text.count(TARBALL) == 1 and named in status.text, status.text
    assert role_lines(status.text) == list(ROLES)  # every role of the release still shown
    assert f"{OTHER}  collecting   waits for source, docs (hugo)" in glance.text  # and the other
    assert f"{TAG}  collecting   waits for source" in glance.text
    assert ready.private and named in ready.text
    assert not windows.private, windows.text  # the other roles go on
    assert world.events(TAG, EventKind.CLAIMED) == ["claimed"]
    assert named in channel_text(world)
    assert world.gate.metrics.scan_failures == 0
    assert await healthz(world) == 200


async def test_a_sparse_file_under_the_size_limit_is_named_as_sparse_not_hashed(
    world: World,
) -> None:
    world.stage(TAG)
    sparse(world.staging / TAG / TARBALL, "3G")

    await world.gate.scan()
    status = await world.say("eve", f"/status {TAG}")
    ready = await world.say("hugo", f"/ready source {TAG}")

    named = f"{TARBALL} (3.2 GB on paper but 0 bytes on disk: a sparse file, not an upload; {REDO})"
    assert status.text.count(TARBALL) == 1 and named in status.text, status.text
    assert role_lines(status.text) == list(ROLES)
    assert ready.private and named in ready.text
    assert world.gate.metrics.scan_failures == 0


async def test_a_sparse_file_on_a_tmpfs_is_named_as_sparse(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.stage(TAG)
    with tmpfs(world.staging / TAG / "docs", "size=4g"):
        world.stage(TAG, roles=["docs"])
        sparse(world.staging / TAG / "docs" / "python-3.14.1-docs-html.zip", "2G")
        status = await world.say("eve", f"/status {TAG}")
    assert "python-3.14.1-docs-html.zip (2.1 GB on paper but 0 bytes on disk" in status.text


async def test_a_50_mb_bundle_is_named_once_and_the_release_stays_shown(world: World) -> None:
    world.stage(TAG)
    world.stage(OTHER)
    sparse(world.staging / TAG / BUNDLE, "50M")

    await world.gate.scan()
    status = await world.say("eve", f"/status {TAG}")
    glance = await world.say("eve", "/status")
    ready = await world.say("hugo", f"/ready source {TAG}")
    windows = await world.say("steve", f"/ready windows {TAG}")

    named = f"{BUNDLE} (52.4 MB, more than the 1.0 MB such a file may be; {REDO})"
    assert status.text.count(BUNDLE) == 1 and named in status.text, status.text
    assert role_lines(status.text) == list(ROLES)
    assert f"{OTHER}  collecting   waits for source, docs (hugo)" in glance.text
    assert f"{TAG}  collecting   waits for source" in glance.text
    assert ready.private and named in ready.text
    assert not windows.private, windows.text
    assert world.gate.metrics.scan_failures == 0
    assert not [n for n in world.chat.texts(ChannelKind.NOTICE) if "Cannot scan" in n]


async def test_a_folder_named_like_a_required_file_is_not_a_regular_file(world: World) -> None:
    world.stage(TAG)
    (world.staging / TAG / TARBALL).unlink()
    (world.staging / TAG / TARBALL).mkdir()
    (world.staging / TAG / TARBALL / "inside.bin").write_bytes(b"x")

    status = await world.say("eve", f"/status {TAG}")
    ready = await world.say("hugo", f"/ready source {TAG}")

    named = f"{TARBALL} (a folder, not a regular file; remove the folder and upload the file)"
    assert named in status.text and f"{TARBALL} (missing)" not in status.text, status.text
    assert ready.private and named in ready.text


async def test_an_empty_folder_named_like_a_required_file_is_not_a_regular_file(
    world: World,
) -> None:
    world.stage(TAG)
    (world.staging / TAG / TARBALL).unlink()
    (world.staging / TAG / TARBALL).mkdir()

    status = await world.say("eve", f"/status {TAG}")

    assert f"{TARBALL} (a folder, not a regular file" in status.text, status.text


# -- more entries than a walk lists ----------------------------------------------------------


async def test_a_release_over_the_entry_budget_still_shows_its_roles_and_says_what_was_not(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_ENTRIES", 200)
    world.stage(TAG)
    world.stage(OTHER)
    for n in range(400):
        (world.staging / TAG / f"stray-{n:03d}.bin").write_bytes(b"x")

    await world.gate.scan()
    status = await world.say("eve", f"/status {TAG}")
    glance = await world.say("eve", "/status")
    view = await board_json(world, TAG)

    assert role_lines(status.text) == list(ROLES), status.text
    assert "holds more than 200 files and folders" in status.text
    assert "(unexpected)" in status.text  # the entries listed are judged, not dropped
    assert f"{OTHER}  collecting   waits for source, docs (hugo)" in glance.text
    assert f"{TAG}  collecting   waits for source" in glance.text
    assert view["listing_cut"] is True and view["files_not_shown"] >= 1
    assert set(view["roles"]) == set(ROLES)
    assert world.gate.metrics.scan_failures == 0


async def test_a_required_file_past_the_entry_budget_is_not_listed_rather_than_missing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_ENTRIES", 30)
    world.stage(TAG)
    for n in range(100):
        (world.staging / TAG / "docs" / f"stray-{n:03d}.bin").write_bytes(b"x")

    status = await world.say("eve", f"/status {TAG}")

    assert "(not listed)" in status.text and "(missing)" not in status.text, status.text


# -- hashing runs beside commands and scans --------------------------------------------------


class SlowHashing(LocalStorage):
    """Local folders whose hashing waits until ``released`` (a big file, a slow disk)."""

    released: threading.Event
    calls: list[tuple[str, ...]]

    def digest(
        self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        self.calls.append(tuple(paths))
        self.released.wait(60)
        return super().digest(tag, paths, fresh=fresh)


class SlowHashingWorld(World):
    def make_storage(self) -> LocalStorage:
        storage = SlowHashing(self.staging, self.public)
        storage.released, storage.calls = threading.Event(), []
        return storage


async def test_a_ready_whose_files_take_long_to_hash_answers_at_once_and_follows_up(
    tmp_path: Path,
) -> None:
    world = SlowHashingWorld(tmp_path)
    storage = world.storage
    assert isinstance(storage, SlowHashing)
    world.gate.hashes.patience = 0.1
    world.stage(TAG)
    try:
        ready = await asyncio.wait_for(world.say("hugo", f"/ready source {TAG}"), 10)
        again = await asyncio.wait_for(world.say("hugo", f"/ready source {TAG}"), 10)
        status = await asyncio.wait_for(world.say("eve", f"/status {TAG}"), 10)
        await asyncio.wait_for(world.gate.scan(), 10)
        health = await asyncio.wait_for(healthz(world), 10)
    finally:
        storage.released.set()
    await asyncio.wait_for(world.gate.follow_ups.finish(), 30)

    expected = f"Checking 4 files staged for {TAG}"
    assert ready.text.startswith(expected) and not ready.private, ready.text
    assert "I will tell the channel whether source is ready for 3.14.1" in ready.text
    assert again.text.startswith(expected)
    assert len(storage.calls) == 1  # one hashing job per file at a time
    assert f"{TAG}: 0 of 4 roles ready" in status.text
    assert world.gate.metrics.scan_failures == 0 and health == 200
    assert world.events(TAG, EventKind.CLAIMED) == ["claimed", "claimed"]
    told = [m for m in world.chat.posts if m.kind is ChannelKind.NOTICE]
    assert [m.text.split(":")[0] for m in told] == [f"source is ready for {TAG}"] * 2
    assert all(m.mentions == ("hugo",) for m in told)


async def test_a_ready_whose_file_changed_while_it_was_hashed_is_refused_in_the_channel(
    tmp_path: Path,
) -> None:
    world = SlowHashingWorld(tmp_path)
    storage = world.storage
    assert isinstance(storage, SlowHashing)
    world.gate.hashes.patience = 0.1
    world.stage(TAG)
    ready = await asyncio.wait_for(world.say("hugo", f"/ready source {TAG}"), 10)
    (world.staging / TAG / TARBALL).unlink()  # gone while it was hashed
    storage.released.set()
    await asyncio.wait_for(world.gate.follow_ups.finish(), 30)

    assert ready.text.startswith("Checking")
    assert world.events(TAG, EventKind.CLAIMED) == []
    told = world.chat.texts(ChannelKind.NOTICE)
    assert told == [
        f"source is not ready for {TAG}: {TARBALL} (missing); fix them in "
        f"{world.staging / TAG}/ and say /ready source {TAG} again."
    ]


async def test_a_publish_whose_claimed_file_is_being_hashed_says_so_and_to_ask_again(
    tmp_path: Path,
) -> None:
    world = SlowHashingWorld(tmp_path)
    storage = world.storage
    assert isinstance(storage, SlowHashing)
    world.stage(TAG)
    storage.released.set()
    await world.ready_all(TAG)
    storage.released.clear()
    world.gate.hashes.patience = 0.1
    stamp = os.stat(world.staging / TAG / TARBALL)
    os.utime(world.staging / TAG / TARBALL, (stamp.st_atime, stamp.st_mtime + 5))  # touched

    try:
        publish = await asyncio.wait_for(world.say("hugo", f"/publish {TAG}"), 10)
        await asyncio.wait_for(world.gate.scan(), 10)
    finally:
        storage.released.set()
    await asyncio.wait_for(world.gate.follow_ups.finish(), 30)

    assert publish.text.startswith(f"Checking 1 file staged for {TAG}"), publish.text
    assert publish.confirm is None
    assert world.gate.metrics.scan_failures == 0
    assert world.chat.texts(ChannelKind.NOTICE)[-1] == (
        f"The file staged for {TAG} is checked; say /publish {TAG} again."
    )
    assert (await world.say("hugo", f"/publish {TAG}")).confirm is not None


async def test_a_scan_decides_a_rewritten_claimed_file_once_it_is_hashed_never_waiting(
    tmp_path: Path,
) -> None:
    world = SlowHashingWorld(tmp_path)
    storage = world.storage
    assert isinstance(storage, SlowHashing)
    world.stage(TAG)
    storage.released.set()
    await world.ready_all(TAG)
    storage.released.clear()
    world.gate.hashes.patience = 0.1
    tarball = world.staging / TAG / TARBALL
    before = os.stat(tarball)
    tarball.write_bytes(tarball.read_bytes().upper())  # same size, other bytes
    os.utime(tarball, (before.st_atime, before.st_mtime + 5))

    try:
        await asyncio.wait_for(world.gate.scan(), 10)
        kept = world.events(TAG, EventKind.WITHDRAWN)
    finally:
        storage.released.set()
    while world.gate.hashes.busy(ReleaseTag.parse(TAG)):
        await asyncio.sleep(0.05)
    await world.gate.scan()

    assert kept == []  # undecided while hashed: neither withdrawn nor a failed scan
    assert world.gate.metrics.scan_failures == 0
    assert world.events(TAG, EventKind.WITHDRAWN) == ["withdrawn"]
    assert f"{TARBALL} changed after /ready" in world.chat.texts(ChannelKind.NOTICE)[-1]
