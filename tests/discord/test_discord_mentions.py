"""On Discord, the person a notice calls on is mentioned as <@id> and is the only one the
message may ping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from adapters.discord.platform import DiscordPlatform
from tests.discord.conftest import ALICE, HUGO, NED, STEVE, TOKEN, DiscordWorld
from tests.discord.mock_discord import MockDiscord

TAG = "3.14.1"
CHANNEL_MESSAGES = "/channels/{}/messages"


@pytest.fixture
async def bot(dworld: DiscordWorld) -> AsyncIterator[DiscordPlatform]:
    """The platform as ``from_config`` builds it: with the people's Discord IDs."""
    settings = dworld.config.model.discord
    assert settings is not None
    people = {"hugo": HUGO, "alice": ALICE, "steve": STEVE, "ned": NED}
    platform = DiscordPlatform(
        TOKEN, settings, dworld.profile.roles, guild_ready_timeout=0.05, people=people
    )
    dworld.chat = platform.chat
    await platform.start(dworld.start())
    yield platform
    await platform.stop()


def notices(mock: MockDiscord, dworld: DiscordWorld) -> list[dict[str, object]]:
    settings = dworld.config.model.discord
    assert settings is not None
    path = CHANNEL_MESSAGES.format(settings.channel)
    return [c.body for c in mock.calls_to("POST", path) if not c.body.get("embeds")]


async def test_a_withdrawn_claim_pings_its_claimer_and_nobody_else(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage(TAG)
    await dworld.say("ned", f"/ready macos {TAG}")
    dworld.write(TAG, "python-3.14.1-macos11.pkg", "re-notarized\n")
    await dworld.gate.scan()

    [notice] = notices(mock_discord, dworld)
    assert str(notice["content"]).startswith(f"<@{NED}> The macos claim on {TAG} was withdrawn")
    allowed = notice["allowed_mentions"]
    assert isinstance(allowed, dict)
    assert allowed["parse"] == [] and allowed["users"] == [int(NED)]


async def test_a_publishable_release_pings_its_rms(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage(TAG)
    await dworld.ready_all(TAG)

    [notice] = notices(mock_discord, dworld)
    assert notice["content"] == (
        f"<@{HUGO}> <@{ALICE}> {TAG} is publishable: every role is ready. RM: /publish {TAG}"
    )
    allowed = notice["allowed_mentions"]
    assert isinstance(allowed, dict)
    assert allowed["parse"] == [] and allowed["users"] == [int(HUGO), int(ALICE)]
