"""``/announce`` on Slack: the draft stays with the RM, and the plan says what follows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.pydotorg.discourse import DiscourseClient
from tests.doubles.discourse import DiscourseDouble
from tests.slack.conftest import HUGO, Workspace
from tests.slack.test_slack import block_texts

TAG = "3.14.1"
WORDS = "This is the first maintenance release of 3.14 & it <fixes> things."


@pytest.fixture
def forum() -> Iterator[DiscourseDouble]:
    with DiscourseDouble(users={"hugo": "forum-key"}) as double:
        yield double


async def test_the_rm_s_announcement_is_private_and_its_hash_is_in_the_plan(
    workspace: Workspace, forum: DiscourseDouble
) -> None:
    ws = workspace
    ws.world.conn.forum = DiscourseClient(forum.url, "forum-key", "hugo", category=23)
    ws.world.stage(TAG)
    await ws.ready_all(TAG)

    set_words = await ws.answer(await ws.command(HUGO, "/announce", f"{TAG} {WORDS}"))
    shown = await ws.answer(await ws.command(HUGO, "/announce", TAG))
    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))

    assert set_words["response_type"] == shown["response_type"] == "ephemeral"
    text = block_texts(shown)
    assert "Python 3.14.1 is now available!" in text
    assert "it &lt;fixes&gt; things" in text  # typed as is, escaped for Slack
    digest = text.split("SHA-256 ", 1)[1][:12]
    assert f"SHA-256 {digest}" in block_texts(plan)
    assert "Then:" in block_texts(plan)
