"""The branch status a release is made under is the one journaled with its plan: late files of
3.13.10 follow 3.13's status when 3.13.10 was published, not the release cycle's of today, and
a restart reads it back from the journal."""

from __future__ import annotations

import json
from pathlib import Path

from bot.config.cycle_copy import local_copy
from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from tests.conftest import TEAM_TOML, World
from tests.pinned import RELEASE_CYCLE, RELEASE_CYCLE_LINE

TAG = "3.13.10"
PKG = f"python-{TAG}-macos11.pkg"


def cycle(folder: Path, status: str) -> Path:
    """A copy of the pinned release cycle with 3.13 in ``status``."""
    data = json.loads(RELEASE_CYCLE.read_text(encoding="utf-8"))
    data["3.13"]["status"] = status
    path = folder / "release-cycle.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def team(root: Path) -> World:
    toml = TEAM_TOML.replace(
        RELEASE_CYCLE_LINE.strip(), f'release_cycle = "{cycle(root, "bugfix")}"'
    ).replace('rm = ["3.14", "3.15"]', 'rm = ["3.13", "3.14", "3.15"]')
    return World(root, team_toml=toml)


def turn_security(world: World) -> None:
    """The release cycle moves 3.13 to security, and the bot restarts with it."""
    path = cycle(world.root, "security")
    world.config.use_release_cycle(local_copy(str(path), world.root, path))
    world.start()


async def publish_without_macos(world: World) -> None:
    world.stage(TAG, roles=["source", "docs", "windows"])
    for role, person in (("source", "hugo"), ("docs", "hugo"), ("windows", "steve")):
        assert not (await world.say(person, f"/ready {role} {TAG}")).private
    assert not (await world.say("hugo", f"/waive {TAG} macos notarization is down")).private
    done = await world.say("hugo", await world.plan(TAG))
    assert done.text.startswith(f"Published {TAG}"), done.text


async def test_the_plan_journals_the_branch_status_it_was_made_under(tmp_path: Path) -> None:
    world = team(tmp_path)
    await publish_without_macos(world)

    planned = [e for e in world.store.events(ReleaseTag.parse(TAG)) if e.kind is EventKind.PLANNED]
    assert planned[-1].data["status"] == "bugfix"
    assert world.store.release(ReleaseTag.parse(TAG)).branch_status == "bugfix"


async def test_a_late_file_follows_the_status_its_release_was_published_under(
    tmp_path: Path,
) -> None:
    world = team(tmp_path)
    await publish_without_macos(world)
    turn_security(world)  # today 3.13 is security: no macOS installers for new releases
    assert world.gate.profile.statuses["3.13"] == "security"

    world.write(TAG, PKG, "the notarized installer, late\n")
    ready = await world.say("ned", f"/ready macos {TAG}")
    assert not ready.private, ready.text  # the macos role still exists for 3.13.10
    plan = await world.say("hugo", f"/publish {TAG}")
    assert plan.plan is not None and plan.confirm is not None, plan.text
    assert [f.path for f in plan.plan.files] == [PKG]
    assert "branch 3.13: bugfix" in (await world.say("eve", f"/status {TAG}")).text
    done = await world.say("hugo", plan.confirm.line)

    assert done.text.startswith(f"Published {TAG}"), done.text
    assert f"3.13.10/{PKG}" in world.public_files()


async def test_a_new_release_of_the_branch_follows_today_s_status(tmp_path: Path) -> None:
    world = team(tmp_path)
    await publish_without_macos(world)
    turn_security(world)
    world.stage("3.13.11")  # what today's profile expects of it: source and docs
    world.write("3.13.11", "python-3.13.11-macos11.pkg", "built anyway\n")

    refused = await world.say("ned", "/ready macos 3.13.11")

    assert refused.private, refused.text
    status = (await world.say("eve", "/status 3.13.11")).text
    assert "branch 3.13: security (source and docs only)" in status
    assert "python-3.13.11-macos11.pkg" in status  # unexpected: no macOS files any more
    roles = world.gate.profile.roles_for(ReleaseTag.parse("3.13.11"))
    assert roles == ("source", "docs")
    assert world.gate.profile.roles_for(ReleaseTag.parse(TAG)) == (
        "source",
        "docs",
        "windows",
        "macos",
    )
