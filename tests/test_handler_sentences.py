"""Who may hold, waive, re-spin and withdraw a claim, and what each of those commands tells the
person who typed it and the release channel: the reply's words and its success mark, the
notice's words and the release it belongs to."""

from __future__ import annotations

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind, ChannelMessage, Reply, Tone
from bot.service.render import event_detail
from tests.conftest import RecordingChat, World

TAG = "3.14.1"


def succeeded(reply: Reply, text: str) -> None:
    """``reply`` says ``text``, as a success (Slack marks it with ✅, a refusal with ❌)."""
    assert reply.text == text
    assert reply.tone is Tone.SUCCESS


def last_notice(world: World) -> ChannelMessage:
    assert isinstance(world.chat, RecordingChat)
    return [m for m in world.chat.posts if m.kind is ChannelKind.NOTICE][-1]


async def headline(world: World) -> str:
    return (await world.say("eve", f"/status {TAG}")).text.splitlines()[0]


# -- /respin -----------------------------------------------------------------------------------


async def test_only_a_release_manager_may_respin_and_the_claims_stay(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)

    for person in ("steve", "eve"):
        reply = await world.say(person, f"/respin {TAG}")
        assert reply.private
        assert reply.text == f"Only a release manager of 3.14 (hugo, alice) can re-spin {TAG}."

    assert (await headline(world)).startswith(f"{TAG}: all 4 roles ready; publishable")


async def test_a_respin_with_nothing_to_withdraw_is_refused_in_one_sentence(
    world: World,
) -> None:
    world.stage(TAG)

    reply = await world.say("hugo", f"/respin {TAG}")

    assert reply.private
    assert reply.text == f"{TAG} has no claim or pending confirmation to withdraw."


async def test_a_respin_before_any_plan_withdraws_the_claims_and_says_so(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)

    reply = await world.say("alice", f"/respin {TAG}")

    succeeded(
        reply,
        f"Re-spin of {TAG}: claims and pending confirmation withdrawn; staging was left as it is.",
    )
    notice = last_notice(world)
    assert notice.tag == TAG
    assert notice.text.startswith(f"alice started a re-spin of {TAG}: every claim is withdrawn")
    assert f"say /ready ROLE {TAG} again" in notice.text
    assert (await headline(world)).startswith(f"{TAG}: 0 of 4 roles ready")


async def test_a_respin_that_drops_a_pending_plan_says_why_in_the_audit(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    await world.plan(TAG)

    assert not (await world.say("hugo", f"/respin {TAG}")).private

    events = world.store.events(ReleaseTag.parse(TAG))  # what `relbot audit TAG` prints
    dropped = [event_detail(e) for e in events if e.kind is EventKind.PLAN_DROPPED]
    assert dropped == ["withdrawn by a re-spin"]


# -- /hold and /unhold -------------------------------------------------------------------------


async def test_a_hold_tells_the_channel_who_holds_it_why_and_how_to_lift_it(
    world: World,
) -> None:
    world.stage(TAG)

    reply = await world.say("ned", f"/hold {TAG} notarization failed")

    succeeded(reply, f"{TAG} is on hold; nothing is published until /unhold {TAG}.")
    notice = last_notice(world)
    assert notice.tag == TAG
    assert notice.text == f"ned put {TAG} on hold: notarization failed. /unhold {TAG} lifts it."


async def test_a_hold_without_a_reason_says_only_who_holds_it(world: World) -> None:
    world.stage(TAG)

    assert not (await world.say("ned", f"/hold {TAG}")).private

    assert last_notice(world).text == f"ned put {TAG} on hold. /unhold {TAG} lifts it."


async def test_a_second_hold_by_the_same_person_is_refused(world: World) -> None:
    world.stage(TAG)
    await world.say("ned", f"/hold {TAG}")

    reply = await world.say("ned", f"/hold {TAG} again")

    assert reply.private
    assert reply.text == f"You already hold {TAG}; /unhold {TAG} lifts it."


async def test_an_unhold_tells_the_channel_who_lifted_the_hold(world: World) -> None:
    world.stage(TAG)
    await world.say("ned", f"/hold {TAG}")

    reply = await world.say("ned", f"/unhold {TAG}")

    succeeded(reply, f"{TAG} is no longer on hold.")
    notice = last_notice(world)
    assert notice.tag == TAG
    assert notice.text == f"ned lifted the hold on {TAG}."


async def test_an_unhold_of_a_release_not_on_hold_is_refused(world: World) -> None:
    world.stage(TAG)

    reply = await world.say("ned", f"/unhold {TAG}")

    assert reply.private
    assert reply.text == f"{TAG} is not on hold."


# -- /waive and /unwaive -----------------------------------------------------------------------


async def test_a_waived_role_is_announced_as_needing_no_ready(world: World) -> None:
    world.stage(TAG)

    reply = await world.say("hugo", f"/waive {TAG} macos")

    succeeded(reply, f"macos is waived for {TAG}; /unwaive {TAG} macos undoes it.")
    notice = last_notice(world)
    assert notice.tag == TAG
    assert notice.text == f"hugo waived macos for {TAG} (needs no /ready)."


async def test_a_second_waiver_of_the_same_target_is_refused(world: World) -> None:
    world.stage(TAG)
    await world.say("hugo", f"/waive {TAG} macos")

    reply = await world.say("alice", f"/waive {TAG} macos")

    assert reply.private
    assert reply.text == f"macos is already waived for {TAG}; /unwaive {TAG} macos undoes it."


async def test_only_a_release_manager_may_undo_a_waiver(world: World) -> None:
    world.stage(TAG)
    await world.say("hugo", f"/waive {TAG} macos notarization is down")

    for person in ("ned", "eve"):
        reply = await world.say(person, f"/unwaive {TAG} macos")
        assert reply.private
        assert reply.text == (
            f"Only a release manager of 3.14 (hugo, alice) can undo waivers of {TAG}."
        )

    status = await world.say("eve", f"/status {TAG}")
    assert "macos    waived     by hugo: notarization is down" in status.text


async def test_an_unwaive_tells_the_channel_who_undid_the_waiver(world: World) -> None:
    world.stage(TAG)
    await world.say("hugo", f"/waive {TAG} macos")

    reply = await world.say("alice", f"/unwaive {TAG} macos")

    succeeded(reply, f"macos is no longer waived for {TAG}.")
    notice = last_notice(world)
    assert notice.tag == TAG
    assert notice.text == f"alice undid the waiver of macos for {TAG}."


# -- /unready ----------------------------------------------------------------------------------


async def test_an_unready_tells_whoever_typed_it_the_role_is_no_longer_ready(
    world: World,
) -> None:
    world.stage(TAG)
    await world.say("ned", f"/ready macos {TAG}")

    reply = await world.say("ned", f"/unready macos {TAG}")

    succeeded(reply, f"macos is no longer ready for {TAG}.")
    notice = last_notice(world)
    assert notice.tag == TAG
    assert notice.text == f"ned withdrew macos from {TAG}."


async def test_an_unready_of_a_role_without_a_claim_is_refused(world: World) -> None:
    world.stage(TAG)

    reply = await world.say("ned", f"/unready macos {TAG}")

    assert reply.private
    assert reply.text == f"macos has no claim on {TAG} to withdraw."
