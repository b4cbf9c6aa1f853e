"""The docs list every command of the code's command table (bot/domain/commands.py), on every
platform, and count them right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.domain.commands import USAGE

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13}


def doc(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["README.md", "docs/commands.md"])
def test_the_general_docs_list_every_command(name: str) -> None:
    text = doc(name)
    missing = [verb for verb in USAGE if f"`/{verb}" not in text]
    assert missing == [], f"{name} does not list {missing}"


def test_the_discord_docs_have_a_row_for_every_command() -> None:
    rows = re.findall(r"^\| `/([a-z-]+)` \|", doc("docs/discord.md"), re.M)
    assert sorted(rows) == sorted(USAGE)


def test_the_slack_docs_name_every_command_and_count_them_right() -> None:
    text = doc("docs/slack.md")
    # Slack keeps /help for itself, and command names may carry a prefix (/relbot-help).
    missing = [verb for verb in USAGE if not re.search(rf"`/(?:[a-z]+-)?{verb}`", text)]
    assert missing == [], f"docs/slack.md does not list {missing}"
    for word in re.findall(r"the (\w+)\s+slash commands", text):
        assert NUMBERS.get(word) == len(USAGE), f"docs/slack.md says {word} slash commands"
