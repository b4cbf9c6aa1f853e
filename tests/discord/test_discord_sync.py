"""Commands are synced to the guild only when the command tree changed (Discord limits
command creations a day): the digest of the last synced tree is kept beside the state."""

from __future__ import annotations

from pathlib import Path

from adapters.discord.commands import SYNC_STAMP
from adapters.discord.platform import DiscordPlatform
from tests.discord.conftest import TOKEN, DiscordWorld
from tests.discord.mock_discord import MockDiscord


def platform(
    dworld: DiscordWorld, stamp: Path, roles: tuple[str, ...] | None = None
) -> DiscordPlatform:
    settings = dworld.config.model.discord
    assert settings is not None
    return DiscordPlatform(
        TOKEN,
        settings,
        roles or dworld.profile.roles,
        guild_ready_timeout=0.05,
        sync_stamp=stamp,
    )


def syncs(mock: MockDiscord) -> int:
    return len(mock.calls_to("PUT", "/applications/"))


async def restart(dworld: DiscordWorld, bot: DiscordPlatform) -> None:
    await bot.start(dworld.start())
    await bot.stop()


async def test_a_restart_with_the_same_commands_does_not_sync_again(
    dworld: DiscordWorld, mock_discord: MockDiscord, tmp_path: Path
) -> None:
    stamp = tmp_path / SYNC_STAMP
    await restart(dworld, platform(dworld, stamp))
    assert syncs(mock_discord) == 1 and stamp.read_text().strip()
    names = sorted(c["name"] for c in mock_discord.commands)

    await restart(dworld, platform(dworld, stamp))

    assert syncs(mock_discord) == 1
    assert sorted(c["name"] for c in mock_discord.commands) == names  # still registered


async def test_a_changed_tree_is_synced_and_a_lost_stamp_syncs_again(
    dworld: DiscordWorld, mock_discord: MockDiscord, tmp_path: Path
) -> None:
    stamp = tmp_path / SYNC_STAMP
    await restart(dworld, platform(dworld, stamp))
    first = stamp.read_text()

    await restart(dworld, platform(dworld, stamp, roles=("source", "docs", "windows")))
    assert syncs(mock_discord) == 2 and stamp.read_text() != first
    role_choices = next(c for c in mock_discord.commands if c["name"] == "ready")["options"][0]
    assert [c["value"] for c in role_choices["choices"]] == ["source", "docs", "windows"]

    stamp.unlink()  # the operator's way to force a sync
    await restart(dworld, platform(dworld, stamp, roles=("source", "docs", "windows")))
    assert syncs(mock_discord) == 3
