"""The docs list every command of every platform, and every chat platform answers every command
of the code's table (bot/domain/commands.py, which is also the console's grammar): a command
added to the grammar but not to a platform, or to a platform but not to its page, fails here."""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from adapters.discord.platform import DiscordPlatform
from adapters.slack.commands import COMMANDS as SLACK_COMMANDS
from adapters.slack.commands import HELP_WITHOUT_PREFIX
from bot.cli import _parser
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


# -- every command the docs and docstrings name exists -------------------------------------

CHAT_MENTION = re.compile(r"(?<![\w/.:~<>-])/([a-z][a-z_-]*)(?![/\w-]|\.\w)")
CLI_MENTION = re.compile(r"`{1,2}relbot\s+([a-z][\w-]*)")  # `relbot x` or ``relbot x``
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CLI_LINE = re.compile(r"^\s*(?:\$\s+)?relbot\s+([a-z][\w-]*)", re.MULTILINE)
SLACK_PREFIX = "rb-"  # the example prefix of docs/slack.md and adapters/slack/commands.py
# Words that look like commands and are not, each with why.
NOT_CHAT_COMMANDS = {
    "healthz": "the health server's path",
    "metrics": "the health server's path",
    "invite": "Slack's own command (inviting the bot to the channel)",
    "readyz": "adapters/slack/commands.py's example of a word that is not a command",
    "readdy": "the README's example of a mistyped command",
}
NOT_CLI_COMMANDS = {"pid": "the storage lease's description (relbot pid 4242 on host …)"}


def cli_commands() -> set[str]:
    """The subcommands ``relbot`` really has, from its own parser."""
    parser = _parser()
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found |= set(action.choices)
    assert found, "relbot's parser has no subcommands?"
    return found


def chat_commands() -> set[str]:
    verbs = set(USAGE)
    prefixed = {SLACK_PREFIX + verb for verb in verbs}
    return verbs | prefixed | {"as", HELP_WITHOUT_PREFIX}  # /as: the console's own line


def docstrings(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text


def explained_texts() -> Iterator[tuple[str, str]]:
    """(where, text) of the README, every docs page and every docstring of bot/ and
    adapters/."""
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield str(page.relative_to(ROOT)), page.read_text(encoding="utf-8")
    for package in ("bot", "adapters"):
        for module in sorted((ROOT / package).rglob("*.py")):
            for text in docstrings(module):
                yield str(module.relative_to(ROOT)), text


def mentions(text: str) -> Iterator[str]:
    """The commands ``text`` names: ``/verb`` and ``relbot verb`` (in backticks or on a line
    of a code block)."""
    for match in CHAT_MENTION.finditer(text):
        yield "/" + match.group(1)
    for match in CLI_MENTION.finditer(text):
        yield "relbot " + match.group(1)
    for block in FENCED.findall(text):
        for match in CLI_LINE.finditer(block):
            yield "relbot " + match.group(1)


def unknown_mentions(texts: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    chat, cli = chat_commands() | set(NOT_CHAT_COMMANDS), cli_commands() | set(NOT_CLI_COMMANDS)
    wrong = set()
    for where, text in texts:
        for mention in mentions(text):
            known = cli if mention.startswith("relbot ") else chat
            if mention.removeprefix("relbot ").removeprefix("/") not in known:
                wrong.add((where, mention))
    return wrong


def test_every_command_the_docs_and_docstrings_name_exists() -> None:
    wrong = unknown_mentions(explained_texts())
    assert not wrong, f"commands that do not exist: {sorted(wrong)}"


def test_the_check_finds_a_command_that_does_not_exist() -> None:
    text = '"""Run ``relbot healthcheck``, then type /unpublish 3.14.1 or /status."""\n'
    page = "Then:\n\n```sh\nrelbot unpublish 3.14.1\n```\n"
    found = unknown_mentions([("example.py", text), ("page.md", page)])
    assert found == {
        ("example.py", "relbot healthcheck"),
        ("example.py", "/unpublish"),
        ("page.md", "relbot unpublish"),
    }
