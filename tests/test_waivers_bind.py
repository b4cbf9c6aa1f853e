"""What a waiver decides, where it matters: a waived role's files stay out of the plan even when
its uploader stages them anyway, and the waivers the RM was shown are the ones their code
confirms (another reason, another RM or a lifted waiver voids it, though no file changed)."""

from __future__ import annotations

from bot.domain.history import EventKind
from tests.conftest import World

TAG = "3.14.1"
ARM64 = "python-3.14.1-arm64.exe"
MACOS = "python-3.14.1-macos11.pkg"


async def test_a_waived_role_whose_uploader_stages_anyway_is_neither_planned_nor_published(
    world: World,
) -> None:
    world.stage(TAG)  # ned uploads the macOS installer, but never says /ready
    assert not (await world.say("hugo", f"/waive {TAG} macos notarization is down")).private
    for role, person in (("source", "hugo"), ("docs", "hugo"), ("windows", "steve")):
        assert not (await world.say(person, f"/ready {role} {TAG}")).private

    plan = await world.say("hugo", f"/publish {TAG}")

    assert plan.confirm is not None and plan.plan is not None, plan.text
    assert "macos" not in plan.plan.by_role() and MACOS not in plan.text
    done = await world.say("hugo", plan.confirm.line)
    assert not done.private, done.text
    public = world.public_files()
    assert "3.14.1/Python-3.14.1.tgz" in public
    assert not any("macos" in p for p in public), sorted(public)
    assert MACOS in world.staged_files(TAG)  # unvetted: left where its uploader put it


async def confirmed_after(world: World, *changes: tuple[str, str]) -> tuple[str, str]:
    """Plan 3.14.1 (ARM64 waived by hugo, "the ARM64 build broke"), make ``changes`` (person,
    line) to the waivers, then confirm the plan's line; the reply and the events' kinds."""
    world.stage(TAG, skip=[ARM64])
    assert not (await world.say("hugo", f"/waive {TAG} {ARM64} the ARM64 build broke")).private
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    for person, change in changes:
        assert not (await world.say(person, change)).private
    reply = await world.say("hugo", line)
    assert reply.private, reply.text
    return reply.text, ",".join(world.events(TAG))


async def test_a_waiver_given_again_with_another_reason_voids_the_code(world: World) -> None:
    text, events = await confirmed_after(
        world,
        ("hugo", f"/unwaive {TAG} {ARM64}"),
        ("hugo", f"/waive {TAG} {ARM64} nobody could build it"),
    )

    assert "waivers changed" in text and "confirmed" not in events
    assert world.public_files() == set()


async def test_a_waiver_given_again_by_another_rm_voids_the_code(world: World) -> None:
    text, events = await confirmed_after(
        world,
        ("alice", f"/unwaive {TAG} {ARM64}"),
        ("alice", f"/waive {TAG} {ARM64} the ARM64 build broke"),
    )

    assert "waivers changed" in text and "confirmed" not in events
    assert world.public_files() == set()


async def test_a_role_waiver_lifted_after_the_plan_voids_the_code(world: World) -> None:
    # macos is waived but said /ready after all: its files are planned either way, so only
    # the waiver differs between the plan shown and the staging confirmed.
    world.stage(TAG)
    assert not (await world.say("hugo", f"/waive {TAG} macos notarization is down")).private
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    assert not (await world.say("alice", f"/unwaive {TAG} macos")).private

    reply = await world.say("hugo", line)

    assert reply.private and "waivers changed" in reply.text, reply.text
    assert world.public_files() == set()
    assert world.events(TAG, EventKind.CONFIRMED) == []
