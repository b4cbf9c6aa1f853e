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
from bot.ports import PromotionReport
from bot.ports.messages import ChannelKind
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

    def close_all() -> None:
        for storage in made:
            storage.close()

    request.addfinalizer(close_all)
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


def aside(world: World, tag: str) -> Path:
    """Where the bot's copies of a release's index wait to replace the live ones."""
    return world.public.parent / ".relbot-public" / "aside" / tag


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
        "freeze",
        "promote",
        "index",
        "register",
        "purge",
        "downloads",
        "release-page",
        "discourse",
        "announce",
        "tidy",
    ]
    promoted = world.store.release(ReleaseTag.parse("3.14.1")).steps_done["promote"]
    assert promoted.startswith("2 folders renamed, 0 files moved"), promoted
    assert not aside(world, "3.14.1").exists()
    assert not (world.staging / "3.14.1").exists()  # the staged originals are gone too


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


async def stopped_at_index(world: World, make_storage: StorageFactory) -> tuple[bytes, bytes]:
    """A confirmed 3.14.1 whose index step finds the live index changed by another publish
    after the confirmation; returns (the live index as recorded by the plan, the other)."""
    recorded = publish_live(world, *LIVE_VERSIONS)
    stage_release(world, "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(make_storage(LiveIndexChangesDuringPromotion))
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text
    world.start()  # a plain storage from here on
    return recorded, index_bytes("3.13.10", *LIVE_VERSIONS)


async def test_a_live_index_changed_between_confirmation_and_swap_stops_once_with_a_way_out(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    recorded, other = await stopped_at_index(world, make_storage)
    (notice,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at index" in n]
    assert "the live index-windows.json changed since /publish 3.14.1" in notice
    assert "/ready" in notice and "/publish 3.14.1" in notice  # the way out, named
    assert live(world) == (other, catalog_bytes(recorded)), "the live pair was touched"
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert not state.is_published and "register" not in state.steps_done
    assert "3.14.1/python-3.14.1.exe" in world.public_files()  # the release's files are public

    for _ in range(3):  # no retry loop: told once, journaled once
        await world.gate.scan()
    assert world.events("3.14.1", EventKind.STOPPED) == ["stopped"]
    assert [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at index" in n] == [notice]
    for line in ("/abort 3.14.1", "/respin 3.14.1"):
        refused = await world.say("hugo", line)
        assert refused.private and notice in refused.text, refused.text
    assert live(world)[0] == other

    # The way out: the windows role rebuilds the index against the live one and claims it;
    # the RM's /publish offers to publish it, and the confirmation finishes the publish.
    rebuilt = stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)
    early = await world.say("hugo", "/publish 3.14.1")
    assert early.private and "/ready windows 3.14.1" in early.text  # not claimed yet
    ready = await world.say("steve", "/ready windows 3.14.1")
    assert not ready.private, ready.text
    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    assert "publish the re-staged index-windows.json, index-windows.json.cat" in offer.text
    done = await world.say("hugo", offer.confirm.line)
    assert not done.private, done.text
    assert live(world) == (rebuilt, catalog_bytes(rebuilt))
    assert world.store.release(ReleaseTag.parse("3.14.1")).is_published
    audit = world.store.events(ReleaseTag.parse("3.14.1"))
    assert any(e.kind is EventKind.CONFIRMED and e.data.get("finishing") for e in audit)


async def test_a_stopped_index_step_can_finish_without_replacing_the_live_index(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    _recorded, other = await stopped_at_index(world, make_storage)

    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    assert "finish without index-windows.json, index-windows.json.cat" in offer.text
    done = await world.say("hugo", offer.confirm.line)

    assert not done.private, done.text
    assert live(world)[0] == other  # left as it is
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert state.is_published
    assert {f.path for f in state.public_files} >= {"python-3.14.1.exe"}
    assert "index-windows.json" not in {f.path for f in state.public_files}
    # The index the publish left out stays in staging, to be published again later.
    assert (world.staging / "3.14.1" / "index-windows.json").exists()


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


async def test_a_publish_stopped_before_anything_moved_leaves_the_index_in_staging(
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
    assert not aside(world, "3.14.1").exists()
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


async def test_abort_of_a_stuck_publish_leaves_the_index_in_staging_with_the_rest(
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
