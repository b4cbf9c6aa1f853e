"""From the confirmation to a checked public site, a public release page and one forum topic
whose text is the one the RM was shown; crashes and faults at every new step converge to
exactly one topic."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import load_config
from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.pydotorg.discourse import DiscourseClient
from bot.pydotorg.release_page import ReleasePageClient, v2_url
from bot.service.pipeline import announcing as steps
from bot.service.pipeline.steps import PIPELINE
from bot.service.render import audit_line
from tests.announcing.conftest import FAST, WORDS, Announcing

TAG = "3.14.1"
TITLE = "Python 3.14.1 is now available!"


class Crash(BaseException):
    """The process dies here (nothing after it runs, nothing catches it)."""


async def staged_and_worded(a: Announcing) -> str:
    """Stage and claim 3.14.1, set the RM's words; returns ``/announce``'s answer."""
    world = a.world
    world.stage(TAG)
    world.write(TAG, "Python-3.14.1.tgz.sigstore", '{"a": "bundle"}')
    await world.ready_all(TAG)
    set_words = await world.say("hugo", f"/announce {TAG} {WORDS}")
    assert not set_words.private, set_words.text
    shown = await world.say("hugo", f"/announce {TAG}")
    assert not shown.private, shown.text
    return shown.text


def shown_hash(text: str) -> str:
    found = re.search(r"SHA-256 ([0-9a-f]{12})", text)
    assert found is not None, text
    return found.group(1)


def published_once(a: Announcing) -> None:
    """Every step of the publish ran to its end once, and one topic is the result."""
    world = a.world
    assert world.events(TAG, EventKind.PUBLISHED) == ["published"]
    done = [
        e.data["step"]
        for e in world.store.events(ReleaseTag.parse(TAG))
        if e.kind is EventKind.STEP_DONE
    ]
    assert sorted(done) == sorted(PIPELINE)
    assert [t.title for t in a.forum.topics] == [TITLE]
    assert a.api.release("Python 3.14.1")["is_published"] is True
    assert a.api.latest() == ["Python 3.14.1"]


async def test_the_publish_checks_the_site_opens_the_page_and_posts_the_text_shown(
    announcing: Announcing,
) -> None:
    a, world = announcing, announcing.world
    shown = await staged_and_worded(a)

    plan = await world.say("hugo", f"/publish {TAG}")
    assert plan.confirm is not None, plan.text
    confirmed = await world.say("hugo", plan.confirm.line)

    assert not confirmed.private, confirmed.text
    published_once(a)
    (topic,) = a.forum.topics
    posted = f"{topic.title}\n\n{topic.raw}"
    assert posted in shown  # byte for byte what /announce showed
    assert shown_hash(shown) in plan.text  # and the plan showed its hash
    assert (topic.username, topic.category, topic.tags) == ("hugo", 23, ("release",))
    assert (
        WORDS in topic.raw and "https://www.python.org/downloads/release/python-3141/" in topic.raw
    )
    # Every published file was fetched over its public URL, .sigstore bundle included.
    fetched = set(a.site.paths)
    assert {"/3.14.1/Python-3.14.1.tgz.sigstore", "/doc/3.14.1/python-3.14.1-docs.epub"} <= fetched
    assert len(fetched) == 20
    (announced,) = world.chat.texts(ChannelKind.ANNOUNCEMENT)
    assert "Release page: https://www.python.org/downloads/release/python-3141/" in announced
    audit = [audit_line(e) for e in world.store.events(ReleaseTag.parse(TAG))]
    assert any(f"announcement-words 53 characters: {WORDS}" in line for line in audit)
    assert f"Discussion: {a.forum.url}t/python-3-14-1-is-now-available/{topic.id}" in announced


async def test_the_plan_says_what_follows_the_registration(announcing: Announcing) -> None:
    world = announcing.world
    await staged_and_worded(announcing)

    plan = await world.say("hugo", f"/publish {TAG}")

    site = announcing.site.url.rstrip("/") + "/"
    assert (
        f"Once the files are registered, every file is downloaded from {site} and compared "
        "with this plan; a difference stops the release page and the post."
    ) in plan.text.splitlines()
    assert "release page is made public on python.org (is_published, pre_release false" in plan.text
    text = plan.plan.announcement if plan.plan else None
    assert text is not None
    assert (
        f"Then the announcement is posted on {announcing.forum.url.rstrip('/')}/ as hugo: "
        f'"{TITLE}" ({len(text.text)} characters, SHA-256 {text.short_hash}); /announce {TAG} '
        "shows it."
    ) in plan.text.splitlines()
    assert plan.notes and all(note in plan.text for note in plan.notes)
    assert plan.text.rstrip().splitlines()[-1].startswith("To publish, type")


async def test_publish_waits_for_the_rm_s_words(announcing: Announcing) -> None:
    world = announcing.world
    world.stage(TAG)
    await world.ready_all(TAG)

    await world.gate.scan()

    draft = await world.say("hugo", f"/announce {TAG}")
    refused = await world.say("hugo", f"/publish {TAG}")
    board = await world.gate.observed(ReleaseTag.parse(TAG))

    assert "Your words are not set yet" in draft.text and TITLE in draft.text
    assert refused.private and f"needs your words: /announce {TAG} TEXT…" in refused.text
    assert board.blockers == (f"the announcement needs your words: /announce {TAG} TEXT…",)
    await world.say("hugo", f"/announce {TAG} {WORDS}")
    assert (await world.gate.observed(ReleaseTag.parse(TAG))).blockers == ()


async def test_words_changed_after_the_plan_void_its_code(announcing: Announcing) -> None:
    world = announcing.world
    await staged_and_worded(announcing)
    line = await world.plan(TAG)

    changed = await world.say("hugo", f"/announce {TAG} Something else entirely, in fact.")
    refused = await world.say("hugo", line)

    assert "The plan offered earlier had other words" in changed.text
    assert refused.private and "the announcement changed" in refused.text
    assert world.public_files() == set() and announcing.forum.topics == []


async def test_only_the_rm_reads_or_writes_the_announcement(announcing: Announcing) -> None:
    world = announcing.world
    world.stage(TAG)

    for line in (f"/announce {TAG}", f"/announce {TAG} My words."):
        reply = await world.say("steve", line)
        assert reply.private and "Only a release manager of 3.14" in reply.text
    assert world.store.release(ReleaseTag.parse(TAG)).announcement_words == ""


async def test_the_words_of_a_release_nobody_staged_are_refused(announcing: Announcing) -> None:
    reply = await announcing.world.say("hugo", "/announce 3.14.11 Words for a typo.")

    assert reply.private and "No release" in reply.text and "is known" in reply.text
    assert announcing.world.store.open_tags() == []


async def test_a_changed_public_byte_stops_before_the_page_and_the_post(
    announcing: Announcing,
) -> None:
    a, world = announcing, announcing.world
    await staged_and_worded(a)
    line = await world.plan(TAG)
    tarball = world.public / "3.14.1" / "Python-3.14.1.tgz"
    original: list[bytes] = []

    def tamper(path: str) -> None:  # the public copy changes after promotion checked it
        if path == "/3.14.1/Python-3.14.1.tgz" and not original:
            original.append(tarball.read_bytes())
            tarball.write_bytes(original[0].replace(b"built", b"BUILT"))

    a.site.before_serving = tamper
    stopped = await world.say("hugo", line)
    for _ in range(3):
        await world.gate.scan()

    assert stopped.private and "did not finish" in stopped.text
    notices = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at downloads" in n]
    assert len(notices) == 1 and "3.14.1/Python-3.14.1.tgz has other bytes" in notices[0]
    assert a.api.release("Python 3.14.1")["is_published"] is False
    assert a.forum.topics == [] and world.chat.texts(ChannelKind.ANNOUNCEMENT) == []

    tarball.write_bytes(original[0])  # someone puts the right bytes back
    await world.gate.scan()
    published_once(a)


@pytest.mark.parametrize("step", steps.STEPS)
@pytest.mark.parametrize("when", ["after journaling its start", "after doing its work"])
async def test_a_crash_at_each_new_step_converges_to_one_post(
    announcing: Announcing, step: str, when: str
) -> None:
    a, world = announcing, announcing.world
    await staged_and_worded(a)
    line = await world.plan(TAG)
    append: Callable[..., Any] = world.store.append

    def dying(tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Any:
        if kind is EventKind.STEP_STARTED and data["step"] == step and when.startswith("after j"):
            append(tag, actor, kind, **data)
            raise Crash
        if kind is EventKind.STEP_DONE and data["step"] == step and when.startswith("after d"):
            raise Crash  # the work is done, the journal does not know it
        return append(tag, actor, kind, **data)

    world.store.append = dying  # type: ignore[method-assign]
    with pytest.raises(Crash):
        await world.say("hugo", line)

    a.restart()  # a new process on the same state file and folders
    await world.gate.resume()

    published_once(a)
    assert len(a.forum.posts()) == 1  # never a second POST, even to be refused
    assert len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 1


async def test_a_post_whose_answer_was_lost_is_found_not_repeated(announcing: Announcing) -> None:
    a, world = announcing, announcing.world
    await staged_and_worded(a)
    a.forum.fail("post", status=502, commit=True)

    stopped = await world.say("hugo", await world.plan(TAG))
    await world.gate.scan()

    assert stopped.private
    published_once(a)
    assert len(a.forum.posts()) == 1
    detail = world.store.release(ReleaseTag.parse(TAG)).steps_done["discourse"]
    assert detail.startswith("posted by an earlier attempt: ")
    stopped_notices = [
        n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at discourse" in n
    ]
    assert len(stopped_notices) == 1 and "never posted twice" in stopped_notices[0]


async def test_a_topic_someone_else_posted_first_is_linked_not_duplicated(
    announcing: Announcing,
) -> None:
    a, world = announcing, announcing.world
    a.forum.add_topic(TITLE, username="ned")
    await staged_and_worded(a)

    await world.say("hugo", await world.plan(TAG))

    assert len(a.forum.topics) == 1 and a.forum.topics[0].username == "ned"
    detail = world.store.release(ReleaseTag.parse(TAG)).steps_done["discourse"]
    assert detail.startswith("a topic with this title exists already, nothing posted: ")
    (announced,) = world.chat.texts(ChannelKind.ANNOUNCEMENT)
    assert "Discussion: " + a.forum.url + "search?q=" in announced


async def test_late_files_are_checked_but_not_announced_again(
    announcing: Announcing, tmp_path: Path
) -> None:
    a, world = announcing, announcing.world
    await staged_and_worded(a)
    await world.say("hugo", await world.plan(TAG))
    world.write(TAG, "python-3.14.1-amd64.exe.spdx.json", '{"sbom": "late"}')
    await world.say("steve", f"/ready windows {TAG}")

    late = await world.say("hugo", await world.plan(TAG))

    assert not late.private, late.text
    assert "/3.14.1/python-3.14.1-amd64.exe.spdx.json" in a.site.paths
    assert len(a.forum.topics) == 1
    state = world.store.release(ReleaseTag.parse(TAG))
    assert state.steps_done["discourse"] == "late files: no new topic"
    assert state.steps_done["release-page"] == "late files: the page is public already"


async def test_a_template_too_short_for_the_forum_refuses_the_plan_in_one_sentence(
    announcing: Announcing,
) -> None:
    world = announcing.world
    config = world.root / "relbot.toml"
    (world.root / "short.md").write_text("{tag}\n", encoding="utf-8")
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace('username = "hugo"', 'username = "hugo"\ntemplate = "short.md"'))
    world.config = load_config(config)
    announcing.restart()
    world.stage(TAG)
    world.write(TAG, "Python-3.14.1.tgz.sigstore", '{"a": "bundle"}')
    await world.ready_all(TAG)

    refused = await world.say("hugo", f"/publish {TAG}")

    assert refused.private
    assert refused.text == (
        f"{TAG} cannot be published yet: The announcement's text is 7 characters; the forum "
        "wants at least 20: add to the template or to your words."
    )
    assert "planned" not in world.events(TAG)


async def test_credentials_python_org_or_the_forum_refuse_are_both_named_before_any_plan(
    announcing: Announcing,
) -> None:
    world = announcing.world
    conn, profile = world.conn, world.profile
    conn.release_page = ReleasePageClient(
        v2_url(announcing.api.url), "not-a-token", profile, retry=FAST
    )
    conn.forum = DiscourseClient(
        announcing.forum.url, "not-a-key", "hugo", category=23, tags=["release"], retry=FAST
    )
    await staged_and_worded(announcing)

    refused = await world.say("hugo", f"/publish {TAG}")

    assert refused.private
    head = f"{TAG} cannot be published yet: python.org release page: "
    assert refused.text.startswith(head), refused.text
    page, forum = refused.text.removeprefix(head).split("; forum: ")
    assert page and forum.endswith("."), refused.text
    assert "planned" not in world.events(TAG)
