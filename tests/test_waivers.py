"""/waive and /unwaive: the release manager lifts one rule for one release (a required file
that will not come, an unexpected file to publish anyway, a role that will not deliver);
audited, shown in the summary and the plan, bound into the plan's digest, refused to others."""

from __future__ import annotations

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.service.render import audit_line
from tests.conftest import World

TAG = "3.14.1"
ARM64 = "python-3.14.1-arm64.exe"


async def test_a_missing_file_blocks_until_the_rm_waives_it_and_is_then_left_out(
    world: World,
) -> None:
    world.stage(TAG, skip=[ARM64])
    assert (await world.say("steve", f"/ready windows {TAG}")).private

    reply = await world.say("hugo", f"/waive {TAG} {ARM64} the ARM64 build broke")

    assert not reply.private, reply.text
    assert world.events(TAG, EventKind.WAIVED) == ["waived"]
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert (
        notices[-1] == f"hugo waived {ARM64} for {TAG} (no longer blocks): the ARM64 build broke."
    )
    await world.ready_all(TAG)
    status = await world.say("eve", f"/status {TAG}")
    assert f"waived: {ARM64} (waived by hugo: the ARM64 build broke)" in status.text
    plan = await world.say("hugo", f"/publish {TAG}")
    assert plan.confirm is not None
    assert f"waived: {ARM64} (waived by hugo: the ARM64 build broke)" in plan.text
    done = await world.say("hugo", plan.confirm.line)
    assert not done.private, done.text
    public = world.public_files()
    assert "3.14.1/python-3.14.1-amd64.exe" in public and f"3.14.1/{ARM64}" not in public


async def test_an_unexpected_file_is_published_once_waived(world: World) -> None:
    world.stage(TAG)
    world.write(TAG, "python-3.14.1-README.txt", "read me\n")
    await world.ready_all(TAG)
    blocked = await world.say("hugo", f"/publish {TAG}")
    assert blocked.private and "python-3.14.1-README.txt (unexpected)" in blocked.text

    assert not (await world.say("hugo", f"/waive {TAG} python-3.14.1-README.txt")).private
    line = await world.plan(TAG)
    assert not (await world.say("hugo", line)).private

    assert "3.14.1/python-3.14.1-README.txt" in world.public_files()


async def test_a_waived_role_needs_no_ready_and_publishes_nothing(world: World) -> None:
    world.stage(TAG, roles=["source", "docs", "windows"])
    for role, person in (("source", "hugo"), ("docs", "hugo"), ("windows", "steve")):
        assert not (await world.say(person, f"/ready {role} {TAG}")).private

    reply = await world.say("hugo", f"/waive {TAG} MACOS the notarization service is down")

    assert not reply.private, reply.text
    status = await world.say("eve", f"/status {TAG}")
    assert "macos    waived     by hugo: the notarization service is down" in status.text
    assert "publishable" in status.text.splitlines()[0]
    line = await world.plan(TAG)
    assert not (await world.say("hugo", line)).private
    assert not any("macos" in p for p in world.public_files())


async def test_only_the_rm_may_waive_and_others_get_one_sentence(world: World) -> None:
    world.stage(TAG, skip=[ARM64])
    for person in ("steve", "eve"):
        reply = await world.say(person, f"/waive {TAG} {ARM64}")
        assert reply.private
        assert (
            reply.text == f"Only a release manager of 3.14 (hugo, alice) can waive rules for {TAG}."
        )
    assert world.events(TAG, EventKind.WAIVED) == []
    assert (await world.say("steve", f"/unwaive {TAG} {ARM64}")).private


async def test_what_cannot_be_waived_is_refused_and_changes_nothing(world: World) -> None:
    world.stage(TAG)
    world.write(TAG, "notes.part", "uploading")
    cases = {
        "python-3.14.1-nothing.exe": "is neither a role, a required file of 3.14.1",
        "notes.part": "is neither a role",
        "../etc/passwd": "is not a path inside 3.14.1's staging folder",
        "amd64/core.msi": "is neither a role",  # allowed only once staged
    }
    for target, why in cases.items():
        reply = await world.say("hugo", f"/waive {TAG} {target}")
        assert reply.private and why in reply.text, reply.text
    docs_in_beta = await world.say("hugo", "/waive 3.14.0b1 docs")
    assert docs_in_beta.text == "docs is not part of 3.14.0b1; there is nothing to waive."
    world.write(TAG, "amd64/core.msi", "msi")
    allowed = await world.say("hugo", f"/waive {TAG} amd64/core.msi")
    assert allowed.text == f"amd64/core.msi is already expected for {TAG}; it needs no waiver."
    assert (await world.say("hugo", f"/unwaive {TAG} macos")).text == (
        f"macos is not waived for {TAG}."
    )
    assert world.events(TAG, EventKind.WAIVED) == []


async def test_a_waiver_changed_after_the_plan_voids_the_code(world: World) -> None:
    world.stage(TAG, skip=[ARM64])
    await world.say("hugo", f"/waive {TAG} {ARM64}")
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    first = world.store.release(ReleaseTag.parse(TAG))
    assert first.offer is not None and first.offer.plan.waivers

    assert not (await world.say("hugo", f"/unwaive {TAG} {ARM64}")).private
    world.write(TAG, ARM64, "a late ARM64 build\n")
    await world.say("steve", f"/ready windows {TAG}")
    reply = await world.say("hugo", line)

    assert reply.private and "waivers changed" in reply.text
    assert world.public_files() == set()
    assert world.events(TAG, EventKind.UNWAIVED) == ["unwaived"]


async def test_waivers_are_in_the_audit_trail(world: World) -> None:
    world.stage(TAG, skip=[ARM64])
    await world.say("hugo", f"/waive {TAG} {ARM64} no ARM64 this time")
    await world.say("hugo", f"/unwaive {TAG} {ARM64}")

    lines = [audit_line(e) for e in world.store.events(ReleaseTag.parse(TAG))]
    assert any("waived" in line and f"{ARM64}: no ARM64 this time" in line for line in lines)
    assert any("unwaived" in line and line.endswith(ARM64) for line in lines)


async def test_a_waived_role_that_says_ready_after_all_is_published(world: World) -> None:
    # The waiver says the role will not deliver; if it does and claims its files, the claim
    # wins: its files are part of the plan and become public.
    world.stage(TAG)
    assert not (await world.say("hugo", f"/waive {TAG} macos notarization is down")).private
    await world.ready_all(TAG)

    line = await world.plan(TAG)
    assert not (await world.say("hugo", line)).private

    assert "3.14.1/python-3.14.1-macos11.pkg" in world.public_files()
