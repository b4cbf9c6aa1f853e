"""``/announce``'s rules as the RM meets them: when there is no announcement to read or write,
which text is shown (the one staged now, the plan's, the confirmed one) and what it says
about itself, and why words are refused."""

from __future__ import annotations

from pathlib import Path

from bot.ports.messages import Tone
from tests.announcing.conftest import WORDS, Announcing
from tests.conftest import World

TAG = "3.14.1"
TITLE = "Python 3.14.1 is now available!"


async def staged(a: Announcing) -> None:
    a.world.stage(TAG)
    await a.world.ready_all(TAG)


def restarted(a: Announcing, tmp_path: Path, discourse: str, frame: str | None = None) -> World:
    """The bot restarted with these lines added to its ``[discourse]`` table; ``frame``: the
    text of ``frames/3.14.md``, a template that lines may name."""
    if frame is not None:
        (tmp_path / "frames").mkdir()
        (tmp_path / "frames" / "3.14.md").write_text(frame, encoding="utf-8")
    table = f'[discourse]\nurl = "{a.forum.url}"\nusername = "hugo"\n{discourse}\n'
    a.world = World(tmp_path, table)
    a.wire()
    return a.world


# -- when there is nothing to announce ---------------------------------------------------------


async def test_without_a_forum_announce_says_the_channel_alone_is_told(world: World) -> None:
    world.stage(TAG)

    reply = await world.say("hugo", f"/announce {TAG}")

    assert reply.private
    assert f"No forum is configured, so publishing {TAG} tells this channel only" in reply.text
    assert "a [discourse] table in the config posts an announcement." in reply.text


async def test_a_published_release_takes_no_announcement_for_late_files(
    announcing: Announcing,
) -> None:
    world = announcing.world
    await staged(announcing)
    await world.say("hugo", f"/announce {TAG} {WORDS}")
    await world.say("hugo", await world.plan(TAG))
    world.write(TAG, "python-3.14.1-amd64.exe.spdx.json", '{"sbom": "late"}')
    await world.say("steve", f"/ready windows {TAG}")

    for line in (f"/announce {TAG}", f"/announce {TAG} Late words."):
        reply = await world.say("hugo", line)
        assert reply.private
        assert f"{TAG} is published; late files are not announced on the forum." in reply.text


# -- the text shown before a publish ----------------------------------------------------------


async def test_the_draft_says_what_it_shows_and_asks_for_the_rm_s_words(
    announcing: Announcing,
) -> None:
    await staged(announcing)

    shown = (await announcing.world.say("hugo", f"/announce {TAG}")).text

    assert shown.startswith(f"The announcement of {TAG}, with the files staged now for ")
    assert "(as in the plan offered)" not in shown
    assert f"\n\n{TITLE}\n" in shown
    assert shown.endswith(
        f"Your words are not set yet: /announce {TAG} TEXT… sets them; /publish waits for them."
    )


async def test_the_draft_names_the_forum_its_category_and_tags(
    announcing: Announcing, tmp_path: Path
) -> None:
    world = restarted(announcing, tmp_path, 'category = 7\ntags = ["release", "3.14"]')
    await staged(announcing)

    shown = (await world.say("hugo", f"/announce {TAG}")).text

    assert f" for {announcing.forum.url} (category 7, release, 3.14), SHA-256 " in shown


async def test_the_draft_says_when_the_topic_gets_no_tags(
    announcing: Announcing, tmp_path: Path
) -> None:
    world = restarted(announcing, tmp_path, "tags = []")
    await staged(announcing)

    shown = (await world.say("hugo", f"/announce {TAG}")).text

    assert f" for {announcing.forum.url} (category 23, no tags), SHA-256 " in shown


async def test_words_set_are_not_asked_for_again(announcing: Announcing) -> None:
    await staged(announcing)
    await announcing.world.say("hugo", f"/announce {TAG} {WORDS}")

    shown = (await announcing.world.say("hugo", f"/announce {TAG}")).text

    assert WORDS in shown and "not set yet" not in shown


async def test_the_draft_says_when_it_is_the_text_of_the_plan_offered(
    announcing: Announcing,
) -> None:
    world = announcing.world
    await staged(announcing)
    await world.say("hugo", f"/announce {TAG} {WORDS}")
    await world.plan(TAG)

    shown = (await world.say("hugo", f"/announce {TAG}")).text

    assert shown.startswith(
        f"The announcement of {TAG}, with the files staged now (as in the plan offered) for "
    )


# -- setting the words ------------------------------------------------------------------------


async def test_words_set_after_a_plan_succeed_and_void_the_plan(announcing: Announcing) -> None:
    world = announcing.world
    await staged(announcing)
    await world.say("hugo", f"/announce {TAG} {WORDS}")
    await world.plan(TAG)

    changed = await world.say("hugo", f"/announce {TAG} Other words, for a second plan.")

    assert changed.tone is Tone.SUCCESS  # Slack shows it with ✅
    assert changed.text.startswith(f"Your words are in the announcement of {TAG} (SHA-256 ")
    assert changed.text.endswith(
        f"The plan offered earlier had other words: /publish {TAG} for a new one."
    )


async def test_words_too_long_for_a_chat_line_are_refused(announcing: Announcing) -> None:
    await staged(announcing)

    reply = await announcing.world.say("hugo", f"/announce {TAG} {'x' * 5_001}")

    assert reply.private and "Your words are 5,001 characters; at most 5,000 fit." in reply.text


async def test_words_are_refused_when_the_template_has_no_place_for_them(
    announcing: Announcing, tmp_path: Path
) -> None:
    frame = "{title}\n\nThe release is out: {release_page}\n\n{files}\n"
    world = restarted(announcing, tmp_path, 'template = "frames/{branch}.md"', frame)
    await staged(announcing)

    reply = await world.say("hugo", f"/announce {TAG} {WORDS}")
    shown = await world.say("hugo", f"/announce {TAG}")

    assert reply.private
    assert reply.text.startswith(
        "The announcement's template has no {words}, so your words would not be posted; "
    )
    assert reply.text.endswith("add {words} to the file discourse.template names.")
    assert not shown.private and "not set yet" not in shown.text


async def test_a_missing_template_is_named_when_reading_or_writing(
    announcing: Announcing, tmp_path: Path
) -> None:
    world = restarted(announcing, tmp_path, 'template = "frames/{branch}.md"')
    await staged(announcing)

    for line in (f"/announce {TAG}", f"/announce {TAG} {WORDS}"):
        reply = await world.say("hugo", line)
        assert reply.private
        assert f"discourse.template: cannot read {tmp_path / 'frames' / '3.14.md'}" in reply.text


# -- during the publish -----------------------------------------------------------------------


async def test_a_publish_under_way_shows_the_confirmed_text_and_keeps_it(
    announcing: Announcing,
) -> None:
    world = announcing.world
    await staged(announcing)
    await world.say("hugo", f"/announce {TAG} {WORDS}")
    plan = await world.say("hugo", f"/publish {TAG}")
    assert plan.confirm is not None
    announcing.forum.fail("post", status=502)  # the post fails: the publish stays under way
    await world.say("hugo", plan.confirm.line)

    shown = await world.say("hugo", f"/announce {TAG}")
    changed = await world.say("hugo", f"/announce {TAG} Other words, too late.")

    assert not shown.private
    assert shown.text.startswith(
        f"The announcement of {TAG} confirmed with its plan for {announcing.forum.url} "
        "(category 23, release), SHA-256 "
    )
    assert f"\n\n{TITLE}\n" in shown.text and WORDS in shown.text
    digest = shown.text.split("SHA-256 ", 1)[1][:12]
    assert digest in plan.text  # the text the RM confirmed
    assert changed.private and changed.text.startswith(f"{TAG} is being published")
    assert "with the announcement its plan confirmed; it no longer changes." in changed.text


async def test_a_publish_confirmed_without_a_forum_posts_nothing_once_one_is_configured(
    announcing: Announcing,
) -> None:
    world = announcing.world
    await staged(announcing)
    world.conn.forum = None  # the bot as it ran before [discourse] was configured
    announcing.api.fail("create", status=503, times=100)  # the registration waits
    await world.say("hugo", await world.plan(TAG))
    announcing.restart()

    shown = await world.say("hugo", f"/announce {TAG}")

    assert shown.private
    assert f"The publish of {TAG} under way posts no announcement." in shown.text
