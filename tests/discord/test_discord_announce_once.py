"""One announcement in the Discord channel, whatever moment the bot dies: a bot that dies at
any step of the publish (or between the announcement's post and its journal) and is started
again on the same state leaves exactly one announcement in the channel (found by the mark at
its end, or refused a second time by Discord for its nonce), and tells the RM ``Published TAG``
as a confirmation does."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp
import pytest

from adapters.discord.platform import DiscordPlatform
from tests.announcing.dying_bot import MOMENTS, Died, died, dying
from tests.discord.conftest import CHANNEL, TOKEN, DiscordWorld
from tests.discord.mock_discord import READ_MESSAGE_HISTORY, MockDiscord

TAG = "3.14.1"


def announcements(mock: MockDiscord) -> list[str]:
    return [
        str(m["content"])
        for m in mock.channel_messages.values()
        if str(m["content"]).startswith(f"{TAG} is published: ")
    ]


async def restart_after_death(
    world: DiscordWorld, when: str, step: str, meanwhile: Callable[[], None] = lambda: None
) -> int:
    """The team confirms the publish; the bot dies at ``when`` of ``step``; ``meanwhile``
    happens; a new bot on the same state file, folders and Discord resumes the publish.
    Returns how many files it publishes."""
    staged = world.stage(TAG)
    await world.ready_all(TAG)
    confirm = await world.plan(TAG)
    world.store.append = dying(world.store.append, when, step, died)  # type: ignore[method-assign]
    with pytest.raises(Died):
        await world.say("hugo", confirm)
    world.store.close()  # what the dead process held, the kernel lets go
    meanwhile()

    await world.start().resume()
    return len(staged)


@pytest.mark.parametrize(("when", "step"), MOMENTS)
async def test_a_bot_dead_at_any_moment_of_the_publish_announces_once_on_discord(
    dworld: DiscordWorld, bot: DiscordPlatform, mock_discord: MockDiscord, when: str, step: str
) -> None:
    files = await restart_after_death(dworld, when, step)

    (announced,) = announcements(mock_discord)
    assert announced.splitlines()[-1].startswith(f"-# relbot\\_announcement {TAG} ")
    told = [
        m["content"]
        for m in mock_discord.channel_messages.values()
        if f"Published {TAG}: " in m["content"]
    ]
    # The RM is named (this world's platform has no Discord IDs to mention with).
    assert told == [f"hugo Published {TAG}: {files} files are public."]
    assert dworld.events(TAG).count("published") == 1


async def test_a_bot_restarted_after_discord_forgot_the_nonce_finds_its_announcement(
    dworld: DiscordWorld, bot: DiscordPlatform, mock_discord: MockDiscord
) -> None:
    """Dead between the post and the journal, restarted after Discord's few minutes: the
    mark in the channel's history is all that tells."""
    await restart_after_death(dworld, "done", "announce", mock_discord.pass_nonce_window)

    assert len(announcements(mock_discord)) == 1


async def test_a_bot_restarted_at_once_is_kept_from_posting_twice_by_the_nonce(
    dworld: DiscordWorld, bot: DiscordPlatform, mock_discord: MockDiscord
) -> None:
    """Dead between the post and the journal, restarted within Discord's few minutes while
    the history cannot be read (Read Message History taken away): Discord answers the
    nonce's message instead of posting another."""
    await restart_after_death(
        dworld, "done", "announce", lambda: mock_discord.deny_in_channel(READ_MESSAGE_HISTORY)
    )

    assert len(announcements(mock_discord)) == 1


async def test_discord_echoes_a_nonce_and_enforces_it_for_a_few_minutes_only(
    mock_discord: MockDiscord,
) -> None:
    """The double as Discord: the nonce comes back in the answer, never in the history; with
    enforce_nonce a repeat within the window answers the first message."""
    url = f"{mock_discord.api_url}/channels/{CHANNEL}/messages"
    post = {"content": "hello", "nonce": "n-1", "enforce_nonce": True}
    async with aiohttp.ClientSession(headers={"Authorization": f"Bot {TOKEN}"}) as session:

        async def send() -> dict[str, str]:
            async with session.post(url, json=post) as answer:
                assert answer.status == 200
                sent: dict[str, str] = await answer.json()
                return sent

        first, again = await send(), await send()
        mock_discord.pass_nonce_window()
        later = await send()
        async with session.get(url, params={"limit": "10"}) as answer:
            history = await answer.json()

    assert first["nonce"] == again["nonce"] == "n-1"
    assert again["id"] == first["id"] != later["id"]
    assert [m["id"] for m in history] == [later["id"], first["id"]]
    assert all("nonce" not in m for m in history)
