"""The docs list every command of every platform, and every chat platform answers every command
of the code's table (bot/domain/commands.py, which is also the console's grammar): a command
added to the grammar but not to a platform, or to a platform but not to its page, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adapters.discord.platform import DiscordPlatform
from adapters.slack.commands import COMMANDS as SLACK_COMMANDS
from bot.config.sections import DiscordConfig
from bot.domain.commands import USAGE

ROOT = Path(__file__).parents[1]
VERBS = [f"/{verb}" for verb in USAGE]


def discord_commands() -> list[str]:
    settings = DiscordConfig(guild=112233445566778899, channel=223344556677889900)
    platform = DiscordPlatform("a-token", settings, ["source", "docs", "windows", "macos"])
    return [f"/{name}" for name in platform.command_names]


def listed(text: str, command: str) -> bool:
    """``command`` appears as a command (not inside a longer name such as /relbot-help)."""
    return re.search(rf"(?<![\w/-]){re.escape(command)}(?![\w-])", text) is not None


def test_slack_answers_every_command_of_the_table() -> None:
    assert list(SLACK_COMMANDS.values()) == VERBS


def test_discord_registers_every_command_of_the_table() -> None:
    assert discord_commands() == VERBS


@pytest.mark.parametrize(
    ("page", "commands"),
    [
        ("README.md", VERBS),
        ("docs/commands.md", VERBS),
        ("docs/slack.md", list(SLACK_COMMANDS)),
        ("docs/discord.md", discord_commands()),
    ],
    ids=["readme", "console", "slack", "discord"],
)
def test_each_platforms_page_lists_every_command(page: str, commands: list[str]) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    missing = [command for command in commands if not listed(text, command)]
    assert not missing, f"{page} does not list {missing}"


NUMBERS = {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13}


def test_the_slack_page_counts_the_commands_right() -> None:
    text = (ROOT / "docs/slack.md").read_text(encoding="utf-8")
    said = re.findall(r"the (\w+)\s+slash commands", text)
    assert said, "docs/slack.md no longer says how many slash commands there are"
    for word in said:
        assert NUMBERS.get(word) == len(USAGE), f"docs/slack.md says {word} slash commands"
