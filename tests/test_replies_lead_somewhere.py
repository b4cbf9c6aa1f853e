"""Replies that say what to do next: a wrong code while the plan's own is valid, a tag typed
wrong, and a headline that names what blocks when every role is ready."""

from __future__ import annotations

from bot.domain.history import EventKind
from bot.service.render import when
from tests.conftest import World


async def test_a_wrong_code_while_the_plans_code_is_valid_says_to_use_it_and_until_when(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    await world.plan("3.14.1")  # its code is CODE0001, valid for 600 s
    world.clock.advance(60)

    reply = await world.say("hugo", "/publish 3.14.1 confirm K7Q2XF3M")

    until = when(world.clock() - 60 + 600)
    assert reply.private
    assert reply.text == (
        "That confirmation code is not valid for 3.14.1; use the code your plan printed "
        f"(valid until {until}), or type /publish 3.14.1 for a new plan."
    )
    assert "CODE0001" not in reply.text
    assert EventKind.CONFIRMED.value not in world.events("3.14.1")
    assert not (await world.say("hugo", "/publish 3.14.1 confirm CODE0001")).private


async def test_a_wrong_code_after_the_plan_expired_asks_for_a_new_plan(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    await world.plan("3.14.1")
    world.clock.advance(601)

    reply = await world.say("hugo", "/publish 3.14.1 confirm K7Q2XF3M")

    assert reply.private
    assert reply.text == (
        "That confirmation code is not valid for 3.14.1; type /publish 3.14.1 for a new plan."
    )


async def test_a_wrong_code_from_another_rm_does_not_point_at_someone_elses_plan(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    await world.plan("3.14.1", person="hugo")

    reply = await world.say("alice", "/publish 3.14.1 confirm K7Q2XF3M")

    assert reply.private and "not valid for 3.14.1" in reply.text
    assert "your plan" not in reply.text


async def test_a_hold_on_a_typo_tag_of_no_branch_names_the_release_instead_of_the_config(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.gate.scan()

    typo = await world.say("hugo", "/hold 3.99.9 typo")
    near = await world.say("ned", "/hold 3.14.11 typo")

    assert typo.private and near.private
    assert typo.text == (
        "No release 3.99.9 is known: nothing is staged or recorded for it; the open releases "
        "are 3.14.1 (/status shows them)."
    )
    assert "config" not in typo.text
    assert near.text == (
        "No release 3.14.11 is known: nothing is staged or recorded for it; did you mean 3.14.1?"
    )
    assert "3.14.1" not in [str(t) for t in world.store.open_tags()]  # nothing was held


async def test_a_typo_tag_with_nothing_open_says_so(world: World) -> None:
    reply = await world.say("hugo", "/ready source 3.99.9")

    assert reply.private
    assert reply.text.endswith("no release is open (stage files to start one).")


async def test_a_staged_release_of_a_branch_without_rm_still_asks_for_the_config(
    world: World,
) -> None:
    world.stage("3.12.9")

    reply = await world.say("ned", "/hold 3.12.9 typo")

    assert reply.private
    assert reply.text.startswith("No release manager is configured for 3.12")


async def test_a_stray_file_is_named_in_the_headline_when_every_role_is_ready(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    world.write("3.14.1", "notes-for-me.txt", "oops")
    for _ in range(2):  # seen twice unchanged: no longer uploading
        await world.gate.scan()

    status = await world.say("ned", "/status 3.14.1")

    headline = status.text.splitlines()[0]
    assert headline == (
        "3.14.1: 4 of 4 roles ready; not publishable yet: staging: notes-for-me.txt (unexpected)"
    )


async def test_the_headline_counts_the_other_blockers_and_leaves_roles_to_the_count(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    world.write("3.14.1", "notes-for-me.txt", "oops")
    for _ in range(2):  # seen twice unchanged: no longer uploading
        await world.gate.scan()
    await world.say("ned", "/hold 3.14.1 notarization failed")

    headline = (await world.say("ned", "/status 3.14.1")).text.splitlines()[0]
    assert headline.endswith(": staging: notes-for-me.txt (unexpected) (and 1 more)")

    await world.say("hugo", "/unready macos 3.14.1")
    headline = (await world.say("ned", "/status 3.14.1")).text.splitlines()[0]
    assert headline == "3.14.1: 3 of 4 roles ready; not publishable yet"
