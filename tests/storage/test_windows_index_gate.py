"""The install-manager index through the whole gate, on local folders and over SFTP (a real
sshd): checked before /publish, published last, replaced only if the live one is unchanged."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.messages import ChannelKind
from bot.ports import PromotionReport
from bot.storage.aside import ASIDE_FOLDER
from bot.storage.local import LocalStorage
from bot.storage.sftp import SftpStorage
from tests.conftest import World
from tests.sshd import SshServer
from tests.storage.conftest import Crash, sftp_storage
from tests.windows_index_data import (
    LIVE_VERSIONS,
    catalog_bytes,
    index_bytes,
    stage_windows_index,
)

StorageFactory = Callable[..., LocalStorage]


@pytest.fixture(params=["local", "sftp"])
def make_storage(request: pytest.FixtureRequest, tmp_path: Path) -> StorageFactory:
    """Builds the backend under test, optionally as a subclass injecting a fault."""
    staging, public = tmp_path / "data" / "staging", tmp_path / "data" / "public"
    if request.param == "local":
        return lambda mixin=None: (_with(mixin, LocalStorage))(staging, public)
    server: SshServer = request.getfixturevalue("sshd")
    made: list[SftpStorage] = []

    def make(mixin: type | None = None) -> SftpStorage:
        made.append(sftp_storage(server, staging, public, _with(mixin, SftpStorage)))
        return made[-1]

    request.addfinalizer(lambda: [s.close() for s in made])
    return make  # type: ignore[return-value]


def _with(mixin: type | None, base: type) -> type:
    return base if mixin is None else type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})


def world_on(tmp_path: Path, make_storage: StorageFactory, mixin: type | None = None) -> World:
    world = World(tmp_path)
    world.storage = make_storage(mixin)
    world.start()
    return world


def publish_live(world: World, *versions: str) -> bytes:
    """What the old pipeline left public: an index of ``versions`` and its catalog."""
    live = index_bytes(*versions)
    world.public.mkdir(parents=True, exist_ok=True)
    (world.public / "index-windows.json").write_bytes(live)
    (world.public / "index-windows.json.cat").write_bytes(catalog_bytes(live))
    return live


def stage_release(world: World, tag: str, *index_versions: str) -> bytes:
    world.stage(tag)
    return stage_windows_index(world.staging / tag, tag, *index_versions)


def live(world: World) -> tuple[bytes, bytes]:
    return (
        (world.public / "index-windows.json").read_bytes(),
        (world.public / "index-windows.json.cat").read_bytes(),
    )


async def test_index_is_published_last_by_replacing_the_live_one(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before = publish_live(world, *LIVE_VERSIONS)
    staged = stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    status = await world.say("eve", "/status 3.14.1")
    assert "Windows index: staged, holds 3.14.1, keeps 24 live installs" in status.text

    reply = await world.say("hugo", "/publish 3.14.1")
    assert reply.plan is not None and reply.confirm is not None
    assert "index-windows.json then index-windows.json.cat replace the live ones" in reply.text
    replacing = {f.target: f for f in reply.plan.files if f.is_replacement}
    assert set(replacing) == {"index-windows.json", "index-windows.json.cat"}
    assert replacing["index-windows.json"].replaces == hashlib.sha256(before).hexdigest()
    assert [f.target for f in reply.plan.files[-2:]] == [
        "index-windows.json",
        "index-windows.json.cat",
    ]
    assert live(world)[0] == before

    done = await world.say("hugo", reply.confirm.line)
    assert not done.private, done.text
    assert live(world) == (staged, catalog_bytes(staged))
    public = world.public_files()
    assert "3.14.1/index-windows.json" not in public and "3.14.1/windows-3.14.1.json" in public
    steps = [
        e.data["step"]
        for e in world.store.events(ReleaseTag.parse("3.14.1"))
        if e.kind is EventKind.STEP_DONE
    ]
    assert steps == [
        "promote",
        "index",
        "register",
        "purge",
        "downloads",
        "release-page",
        "discourse",
        "announce",
    ]
    promoted = world.store.release(ReleaseTag.parse("3.14.1")).steps_done["promote"]
    assert promoted.startswith("2 folders renamed, 0 files moved"), promoted
    assert not (world.staging / ASIDE_FOLDER / "3.14.1").exists()


async def test_an_index_built_before_another_release_was_published_waits_for_a_rebuild(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    publish_live(world, *LIVE_VERSIONS)
    first = stage_release(world, "3.14.1", *LIVE_VERSIONS)
    stale = stage_release(world, "3.14.2", *LIVE_VERSIONS)  # built from the same live index
    await world.ready_all("3.14.1")
    await world.ready_all("3.14.2")
    await world.say("hugo", await world.plan("3.14.1"))
    assert live(world)[0] == first

    refused = await world.say("hugo", "/publish 3.14.2")
    assert refused.private and refused.confirm is None
    assert "index-windows.json was built before 3.14.1 was published: rebuild it" in refused.text
    assert live(world)[0] == first

    rebuilt = stage_windows_index(world.staging / "3.14.2", "3.14.2", "3.14.1", *LIVE_VERSIONS)
    assert rebuilt != stale
    await world.gate.scan()  # the windows claim is withdrawn: its files changed
    await world.ready_all("3.14.2")
    done = await world.say("hugo", await world.plan("3.14.2"))
    assert not done.private, done.text
    assert live(world)[0] == rebuilt


async def test_one_of_the_pair_alone_blocks_publish_with_the_reason(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before = publish_live(world, *LIVE_VERSIONS)
    stage_release(world, "3.14.1", *LIVE_VERSIONS)
    (world.staging / "3.14.1" / "index-windows.json.cat").unlink()
    await world.ready_all("3.14.1")
    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private
    assert "index-windows.json is staged without its catalog index-windows.json.cat" in (
        refused.text
    )
    assert live(world)[0] == before


async def test_without_a_staged_index_the_live_one_is_left_alone(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before = publish_live(world, *LIVE_VERSIONS)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    status = await world.say("eve", "/status 3.14.1")
    assert "Windows index: not staged: the live index is left alone" in status.text
    done = await world.say("hugo", await world.plan("3.14.1"))
    assert not done.private, done.text
    assert live(world)[0] == before


async def test_a_live_index_changed_between_plan_and_confirmation_refuses_the_code(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    publish_live(world, *LIVE_VERSIONS)
    stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    other = publish_live(world, "3.13.10", *LIVE_VERSIONS)  # another publish meanwhile
    refused = await world.say("hugo", line)
    assert refused.private
    assert "3.13.10 was published" in refused.text  # the fresh check sees the new live index
    assert live(world)[0] == other and world.public_files() == {
        "index-windows.json",
        "index-windows.json.cat",
    }


class LiveIndexChangesDuringPromotion:
    """Another publish replaces the live index while this one promotes its files."""

    def promote(self, plan: PublishPlan, **kw: object) -> PromotionReport:
        report = super().promote(plan, **kw)  # type: ignore[misc]
        root: Path = Path(str(self.public))  # type: ignore[attr-defined]
        other = index_bytes("3.13.10", *LIVE_VERSIONS)
        (root / "index-windows.json").write_bytes(other)
        return report  # type: ignore[no-any-return]


async def test_a_live_index_changed_between_confirmation_and_swap_stops_the_publish(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    recorded = publish_live(world, *LIVE_VERSIONS)
    staged = stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(make_storage(LiveIndexChangesDuringPromotion))
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text
    (notice,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at index" in n]
    assert "the live index-windows.json changed since /publish 3.14.1" in notice
    other = index_bytes("3.13.10", *LIVE_VERSIONS)
    assert live(world) == (other, catalog_bytes(recorded)), "the live pair was touched"
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert not state.is_published and "register" not in state.steps_done
    assert "3.14.1/python-3.14.1.exe" in world.public_files()  # the release's files are public

    world.start()  # a plain storage: the scan retries, and the swap still does not happen
    await world.gate.scan()
    assert live(world)[0] == other
    assert not world.store.release(ReleaseTag.parse("3.14.1")).is_published

    (world.public / "index-windows.json").write_bytes(recorded)  # put back as planned
    await world.gate.scan()
    assert live(world) == (staged, catalog_bytes(staged))
    assert world.store.release(ReleaseTag.parse("3.14.1")).is_published


class CrashAfterFirstReplace:
    """The bot dies right after the index's rename, before the catalog's."""

    def _replace(self, *args: object) -> None:
        super()._replace(*args)  # type: ignore[misc]
        raise Crash


async def test_a_crash_between_the_two_renames_is_finished_by_the_resume(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    publish_live(world, *LIVE_VERSIONS)
    staged = stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(make_storage(CrashAfterFirstReplace))
    with pytest.raises(Crash):
        await world.say("hugo", line)
    index_now, catalog_now = live(world)
    assert index_now == staged and catalog_now != catalog_bytes(staged)

    world.start()
    await world.gate.resume()
    assert live(world) == (staged, catalog_bytes(staged))
    events = world.events("3.14.1")
    assert events.count("published") == 1
    tag = ReleaseTag.parse("3.14.1")
    assert world.store.release(tag).steps_done["index"] == "index-windows.json.cat replaced"


class StagingRewrittenAfterConfirmation:
    """The Windows expert uploads another index once promotion has started."""

    def promote(self, plan: PublishPlan, **kw: object) -> PromotionReport:
        root = Path(str(self.staging)) / str(plan.tag)  # type: ignore[attr-defined]
        root.mkdir(exist_ok=True)  # the confirmation may have moved the folder away
        (root / "index-windows.json").write_bytes(b'{"versions": []}')
        return super().promote(plan, **kw)  # type: ignore[misc, no-any-return]


async def test_the_index_published_is_the_confirmed_one_whatever_staging_does_after(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    publish_live(world, *LIVE_VERSIONS)
    staged = stage_release(world, "3.14.0rc1", *LIVE_VERSIONS)
    (world.public / "3.14.0").mkdir()  # a prerelease folder exists: promotion file by file
    await world.ready_all("3.14.0rc1")
    line = await world.plan("3.14.0rc1")
    world.start(make_storage(StagingRewrittenAfterConfirmation))
    done = await world.say("hugo", line)
    assert not done.private, done.text
    assert live(world) == (staged, catalog_bytes(staged))
    assert json.loads((world.staging / "3.14.0rc1" / "index-windows.json").read_bytes()) == {
        "versions": []
    }  # the late upload stays in staging, unpublished


async def test_a_live_index_rewritten_with_the_same_installs_still_refuses_the_code(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before = publish_live(world, *LIVE_VERSIONS)
    stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    rewritten = json.dumps(json.loads(before), indent=1).encode()  # same installs, new bytes
    (world.public / "index-windows.json").write_bytes(rewritten)
    refused = await world.say("hugo", line)
    assert refused.private
    assert "(the live index-windows.json changed); nothing was published" in refused.text
    assert live(world)[0] == rewritten


async def test_a_publish_stopped_before_anything_moved_puts_the_index_back_in_staging(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before = publish_live(world, *LIVE_VERSIONS)
    staged = stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    (world.public / "3.14.1").mkdir()
    (world.public / "3.14.1" / "python-3.14.1.exe").write_text("someone else's")
    reply = await world.say("hugo", line)
    assert reply.private
    assert any("stopped before anything moved" in n for n in world.chat.texts(ChannelKind.NOTICE))
    assert (world.staging / "3.14.1" / "index-windows.json").read_bytes() == staged
    assert (world.staging / "3.14.1" / "index-windows.json.cat").read_bytes() == (
        catalog_bytes(staged)
    )
    assert not (world.staging / ASIDE_FOLDER / "3.14.1").exists()
    assert live(world)[0] == before

    (world.public / "3.14.1" / "python-3.14.1.exe").unlink()
    reply = await world.say("hugo", await world.plan("3.14.1"))
    assert not reply.private, reply.text
    assert live(world)[0] == staged


async def test_a_live_index_that_is_not_a_file_blocks_with_the_reason_not_an_outage(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    (world.public / "index-windows.json").mkdir(parents=True)
    stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private
    assert "index-windows.json cannot be checked:" in refused.text
    assert "not a regular file" in refused.text
    await world.gate.scan()
    assert not any("Cannot scan" in n for n in world.chat.texts(ChannelKind.NOTICE))


async def test_abort_of_a_stuck_publish_puts_the_index_back_with_the_rest(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before = publish_live(world, *LIVE_VERSIONS)
    staged = stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    (world.public / "3.14.1").write_text("a file where the release's folder goes")
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text
    aborted = await world.say("hugo", "/abort 3.14.1")
    assert not aborted.private, aborted.text
    assert (world.staging / "3.14.1" / "index-windows.json").read_bytes() == staged
    assert (world.staging / "3.14.1" / "index-windows.json.cat").read_bytes() == (
        catalog_bytes(staged)
    )
    assert live(world)[0] == before
