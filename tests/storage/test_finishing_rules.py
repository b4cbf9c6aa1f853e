"""The way out of a publish that stopped after making files public, as the RM reads it:
what ``/publish TAG`` offers to finish without (and tells to stage again), when a re-staged
install index is offered instead of the live one, and why one is refused. Also what a command
is told while a publish waits. Local storage on real folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

from bot.config.cycle_copy import local_copy
from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.service.render import audit_line, size_text
from bot.storage.local import LocalStorage
from tests.conftest import TEAM_TOML, World
from tests.pinned import RELEASE_CYCLE, RELEASE_CYCLE_LINE
from tests.storage.test_stops import FailsAtTheSecondRename
from tests.storage.test_windows_index_gate import (
    StorageFactory,
    publish_live,
    stopped_at_index,
)
from tests.test_pinning import PKG, AppendedAfterTheMove, stuck_publish
from tests.windows_index_data import LIVE_VERSIONS, catalog_bytes, index_bytes, stage_windows_index

PAIR = "index-windows.json, index-windows.json.cat"


def local(world: World) -> StorageFactory:
    """Local storage for ``stopped_at_index``, optionally with a fault mixed in."""

    def make(mixin: type | None = None) -> LocalStorage:
        cls = LocalStorage if mixin is None else type("Faulty", (mixin, LocalStorage), {})
        return cls(world.staging, world.public)  # type: ignore[no-any-return]

    return make


def restage(world: World, index: bytes) -> None:
    """The Windows expert uploads ``index`` and its catalog for 3.14.1 again."""
    folder = world.staging / "3.14.1"
    (folder / "index-windows.json").write_bytes(index)
    (folder / "index-windows.json.cat").write_bytes(catalog_bytes(index))


# -- a publish that waits ----------------------------------------------------------------------


async def test_a_command_refused_while_a_publish_waits_says_what_it_waits_on(
    world: World,
) -> None:
    await stuck_publish(world)
    refused = await world.say("steve", "/unready windows 3.14.1")
    assert refused.private
    assert refused.text.startswith("3.14.1 is being published right now (Publishing 3.14.1 ")
    assert "stopped at promote" in refused.text


# -- finishing without files ---------------------------------------------------------------------


async def test_finishing_without_one_file_says_to_stage_it_again(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(AppendedAfterTheMove(world.staging, world.public))
    await world.say("hugo", line)
    world.start()

    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    assert f"finish without {PKG} (not registered, not announced; stage it again" in offer.text


async def test_a_stop_naming_no_file_is_finished_without_the_files_not_yet_public(
    world: World,
) -> None:
    world.start(FailsAtTheSecondRename(world.staging, world.public))
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    await world.say("hugo", await world.plan("3.14.1"))
    docs = {p.removeprefix("doc/3.14.1/") for p in world.public_files()}
    assert docs  # the docs' folder went public, the release's did not
    world.start()
    os.rename(world.storage.work, world.storage.work.with_name("elsewhere"))
    await world.gate.scan()  # the resume finds the work folder gone: nothing it can do
    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "work folder" in n]
    assert "offers to finish with the files that are public, the others left out" in told

    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    said = offer.text.partition("finish without")[2].partition("(not registered")[0]
    assert "Python-3.14.1.tar.xz" in said  # the release's folder is not public yet
    assert not any(name in said for name in docs), said  # those are public already
    assert "(not registered, not announced; stage them again as late files)" in offer.text


# -- a re-staged install index -------------------------------------------------------------------


async def test_a_re_staged_index_not_claimed_yet_is_refused_with_the_way_to_claim_it(
    world: World,
) -> None:
    await stopped_at_index(world, local(world))
    stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)

    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private and refused.confirm is None
    assert refused.text == (
        f"{PAIR} in staging are not the confirmed ones and not claimed yet: say "
        "/ready windows 3.14.1 first, then /publish 3.14.1."
    )


async def test_a_re_staged_index_whose_claim_was_withdrawn_is_refused(world: World) -> None:
    await stopped_at_index(world, local(world))
    stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)
    unready = await world.say("steve", "/unready windows 3.14.1")
    assert not unready.private, unready.text

    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private and "not claimed yet: say /ready windows 3.14.1 first" in refused.text


async def test_a_re_staged_index_changed_after_its_claim_is_refused_whatever_its_stamp(
    world: World,
) -> None:
    await stopped_at_index(world, local(world))
    staged = world.staging / "3.14.1" / "index-windows.json"
    claimed = stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)
    ready = await world.say("steve", "/ready windows 3.14.1")
    assert not ready.private, ready.text
    # Another index of the same size, with the claimed one's mtime (an upload keeping times).
    stamp = staged.stat()
    other = claimed.replace(b"https://www.", b"https://ftp.")
    assert len(other) == len(claimed) and other != claimed
    staged.write_bytes(other)
    os.utime(staged, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))

    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private and refused.confirm is None
    assert "not the confirmed ones and not claimed yet" in refused.text


async def test_a_re_staged_index_is_judged_against_the_live_index_as_it_is_at_publish(
    world: World,
) -> None:
    await stopped_at_index(world, local(world))
    stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)
    ready = await world.say("steve", "/ready windows 3.14.1")
    assert not ready.private, ready.text
    publish_live(world, "3.13.11", "3.13.10", *LIVE_VERSIONS)  # another publish meanwhile

    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private and refused.confirm is None
    assert refused.text.startswith(
        "The re-staged index of 3.14.1 cannot be published: index-windows.json was built "
        "before 3.13.11 was published"
    )


async def test_every_reason_a_re_staged_index_is_refused_is_named(world: World) -> None:
    await stopped_at_index(world, local(world))
    restage(world, index_bytes(*LIVE_VERSIONS))  # neither 3.13.10's installs nor 3.14.1's
    ready = await world.say("steve", "/ready windows 3.14.1")
    assert not ready.private, ready.text

    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private and refused.confirm is None
    reasons = refused.text.removeprefix("The re-staged index of 3.14.1 cannot be published: ")
    assert reasons.startswith("index-windows.json was built before 3.13.10 was published")
    assert "; index-windows.json lacks 3.14.1's installs" in reasons


async def test_an_index_in_staging_that_is_not_a_regular_file_is_left_out(world: World) -> None:
    await stopped_at_index(world, local(world))
    staged = world.staging / "3.14.1" / "index-windows.json"
    staged.unlink()
    staged.symlink_to(world.public / "index-windows.json")

    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    assert f"finish without {PAIR} (the live index stays as it is)" in offer.text


async def test_a_re_staged_index_of_a_branch_turned_security_meanwhile_is_refused(
    tmp_path: Path,
) -> None:
    # The rule under test: only a role that takes part in the release may re-stage its index.
    # A branch turning security under a stopped publish is the one way to get there today,
    # because a release's branch status is pinned when it is published, not when confirmed.
    cycle = json.loads(RELEASE_CYCLE.read_text(encoding="utf-8"))
    path = tmp_path / "release-cycle.json"
    path.write_text(json.dumps(cycle), encoding="utf-8")
    world = World(
        tmp_path,
        team_toml=TEAM_TOML.replace(RELEASE_CYCLE_LINE.strip(), f'release_cycle = "{path}"'),
    )
    await stopped_at_index(world, local(world))
    stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)
    ready = await world.say("steve", "/ready windows 3.14.1")
    assert not ready.private, ready.text
    cycle["3.14"]["status"] = "security"  # no Windows builds for new 3.14 releases from now
    path.write_text(json.dumps(cycle), encoding="utf-8")
    world.config.use_release_cycle(local_copy(str(path), world.root, path))
    world.start()  # the bot restarts with it

    refused = await world.say("hugo", "/publish 3.14.1")
    assert refused.private and refused.confirm is None
    assert refused.text == (
        "The re-staged index of 3.14.1 cannot be published: its role takes no part."
    )


async def test_the_audit_counts_the_bytes_of_the_re_staged_index_published(world: World) -> None:
    await stopped_at_index(world, local(world))
    stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)
    ready = await world.say("steve", "/ready windows 3.14.1")
    assert not ready.private, ready.text
    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    done = await world.say("hugo", offer.confirm.line)
    assert not done.private, done.text

    public = world.public_files()  # this release's files and the index it replaced
    size = sum((world.public / p).stat().st_size for p in public)
    events = world.store.events(ReleaseTag.parse("3.14.1"))
    (line,) = [audit_line(e) for e in events if e.kind is EventKind.PUBLISHED]
    assert line.endswith(f"published     {len(public)} files, {size_text(size)}"), line
