"""A release team on Discord: the team of tests/conftest.World with Discord user IDs, a
``[discord]`` table pointing at a local mock of Discord, and the real discord.py client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.discord.platform import DiscordPlatform
from bot.ports import Chat
from tests.conftest import BaseWorld, RecordingChat
from tests.discord.mock_discord import MockDiscord

GUILD = 700000000000000001
CHANNEL = 700000000000000002
TOKEN = "mock-bot-token"
TOKEN_ENV = "RELBOT_TEST_DISCORD_TOKEN"
HUGO = "112233445566778899"  # RM of 3.14, source and docs
STEVE = "200000000000000002"  # windows
NED = "300000000000000003"  # macos
ALICE = "400000000000000004"  # RM of 3.14 too
STRANGER = "999999999999999999"  # not in the config
SLACK_STEVE = "U0STEVE"  # steve on Slack, for the test of both platforms on one state
HOLDERS = {"source": HUGO, "docs": HUGO, "windows": STEVE, "macos": NED}

DISCORD_TEAM_TOML = """
    profile = "cpython"
    state = "data/state.db"
    confirm_timeout = 600

    [storage]
    kind = "local"
    staging = "data/staging"
    public = "data/public"

    [discord]
    token_env = "{token_env}"
    guild = {guild}
    channel = {channel}
    api_url = "{api_url}"

    [people.hugo]
    rm = ["3.14", "3.15"]
    roles = ["source", "docs"]
    discord = "{hugo}"

    [people.alice]
    rm = ["3.14"]
    discord = "{alice}"

    [people.steve]
    roles = ["windows"]
    discord = "{steve}"
    slack = "{slack_steve}"

    [people.ned]
    roles = ["macos"]
    discord = "{ned}"
"""


class DiscordWorld(BaseWorld[Chat]):
    """World's folders, clock and state, with a team that has Discord IDs and a ``[discord]``
    table pointing at the mock."""

    def __init__(self, root: Path, api_url: str, extra_toml: str = "") -> None:
        toml = DISCORD_TEAM_TOML.format(
            token_env=TOKEN_ENV,
            guild=GUILD,
            channel=CHANNEL,
            api_url=api_url,
            hugo=HUGO,
            alice=ALICE,
            steve=STEVE,
            ned=NED,
            slack_steve=SLACK_STEVE,
        )
        # Records until a test gives it its platform's channel.
        super().__init__(root, extra_toml, team_toml=toml, chat=RecordingChat())

    def platform(self) -> DiscordPlatform:
        """A new bot process's Discord platform (READY after a short wait for guilds)."""
        settings = self.config.model.discord
        assert settings is not None
        return DiscordPlatform(TOKEN, settings, self.profile.roles, guild_ready_timeout=0.05)


@pytest.fixture
async def mock_discord() -> AsyncIterator[MockDiscord]:
    async with MockDiscord(guild=GUILD, channel=CHANNEL, token=TOKEN) as mock:
        mock.add_members(HUGO, STEVE, NED, ALICE)
        yield mock


@pytest.fixture
def dworld(
    tmp_path: Path, mock_discord: MockDiscord, monkeypatch: pytest.MonkeyPatch
) -> DiscordWorld:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    return DiscordWorld(tmp_path, mock_discord.api_url)


@pytest.fixture
async def bot(dworld: DiscordWorld) -> AsyncIterator[DiscordPlatform]:
    """The Discord platform started on the world's gate, posting to the mock's channel."""
    platform = dworld.platform()
    dworld.chat = platform.chat
    await platform.start(dworld.start())
    yield platform
    await platform.stop()
