"""``/announce`` on Discord: the RM reads a long announcement in full, privately."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.discord.embeds import MAX_CONTENT, reply_contents
from adapters.discord.platform import DiscordPlatform
from bot.pydotorg.discourse import DiscourseClient
from tests.discord.conftest import HUGO, DiscordWorld
from tests.discord.mock_discord import EPHEMERAL, MockDiscord
from tests.doubles.discourse import DiscourseDouble

TAG = "3.14.1"


@pytest.fixture
def forum() -> Iterator[DiscourseDouble]:
    with DiscourseDouble(users={"hugo": "forum-key"}) as double:
        yield double


async def test_a_long_announcement_arrives_whole_in_several_private_messages(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld, forum: DiscourseDouble
) -> None:
    dworld.conn.forum = DiscourseClient(forum.url, "forum-key", "hugo", category=23)
    dworld.stage(TAG)
    words = "A paragraph of highlights for this release, long enough to matter. " * 30

    set_words = await mock_discord.reply(
        await mock_discord.command("announce", user=HUGO, tag=TAG, text=words)
    )
    sent = await mock_discord.command("announce", user=HUGO, tag=TAG)
    first, second = await mock_discord.replies(sent, 2)

    assert "Your words are in the announcement of 3.14.1" in set_words["content"]
    shown = first["content"] + second["content"]
    assert all(m["flags"] & EPHEMERAL for m in (first, second))
    assert all(len(m["content"]) <= MAX_CONTENT for m in (first, second))
    assert "Python 3.14.1 is now available!" in shown and words.strip()[-60:] in shown


def test_a_short_reply_is_one_message_and_a_long_one_loses_nothing() -> None:
    long_text = "\n".join(f"line {n} " + "x" * 300 for n in range(20))

    assert reply_contents("One sentence.") == ["One sentence."]
    parts = reply_contents(long_text)
    assert len(parts) > 1 and all(len(p) <= MAX_CONTENT for p in parts)
    kept = "\n".join(p.removeprefix("```\n").removesuffix("\n```") for p in parts)
    assert kept == long_text
