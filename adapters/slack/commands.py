"""The names of relbot's slash commands on Slack, and the app manifest made from them.

Slash command names are global in a workspace: a large one may already have a ``/status`` or a
``/publish``. ``[slack] command_prefix = "rb-"`` names every command with the prefix
(``/rb-ready``, ``/rb-publish``, ``/rb-help``), and relbot's answers and channel messages say
those names. Without a prefix the names are the contract's, except ``/help``, which Slack keeps
for itself: ``/relbot-help``. The manifest (``relbot slack-manifest``) is written from the same
table, so the commands Slack offers are exactly those relbot answers.

This module imports no Slack SDK: ``relbot slack-manifest`` needs none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from bot.domain.commands import USAGE

HELP_WITHOUT_PREFIX = "relbot-help"  # Slack reserves /help
EVENTS_PLACEHOLDER = "https://YOUR-HOST/slack/events"

# What Slack shows for each command of the code's table (bot.domain.commands.USAGE): its
# description, and the hint after the name. A verb missing here fails the manifest's test.
SLASH: dict[str, tuple[str, str]] = {
    "ready": (
        "Your role's files for a release are staged and final (checked now)",
        "ROLE TAG   e.g. macos 3.14.1",
    ),
    "unready": (
        "Withdraw a /ready claim",
        "ROLE TAG   e.g. macos 3.14.1",
    ),
    "status": (
        "What is ready, missing or blocking (only you see the answer)",
        "[TAG]   e.g. 3.14.1",
    ),
    "hold": (
        "Block publishing a release until /unhold",
        "TAG [reason]   e.g. 3.14.1 installer fails to notarize",
    ),
    "unhold": (
        "Lift a hold (the holder or the release manager)",
        "TAG   e.g. 3.14.1",
    ),
    "publish": (
        "Release manager: see the publish plan, then confirm it",
        "TAG   e.g. 3.14.1",
    ),
    "respin": (
        "Release manager: withdraw every claim and pending confirmation",
        "TAG   e.g. 3.14.1",
    ),
    "waive": (
        "Release manager: lift one rule (a file, or a role) for one release",
        "TAG PATH|ROLE [reason]   e.g. 3.14.1 python-3.14.1-arm64.exe build broke",
    ),
    "unwaive": (
        "Release manager: undo a waiver",
        "TAG PATH|ROLE   e.g. 3.14.1 python-3.14.1-arm64.exe",
    ),
    "abort": (
        "Release manager: cancel a confirmed publish that made nothing public",
        "TAG   e.g. 3.14.1",
    ),
    "announce": (
        "Release manager: see or set the announcement the publish will post",
        "TAG [your words]   e.g. 3.14.1 This release fixes ...",
    ),
    "help": (
        "The relbot commands, with examples",
        "",
    ),
}

# The bot token's scopes, each with why relbot needs it.
SCOPES: tuple[tuple[str, str], ...] = (
    ("commands", "the slash commands above"),
    ("chat:write", "the summary, notices and announcements in the release channel"),
    ("channels:read", "relbot check: the channel exists and the bot is in it"),
    ("groups:read", "the same for a private channel"),
    ("users:read", "relbot check: each person's ID is a user of the workspace"),
    ("channels:history", "after a restart, find the announcement posted, never post it twice"),
    ("groups:history", "the same for a private channel"),
)


def command_names(prefix: str = "") -> dict[str, str]:
    """Slash command → the gate's verb (``/rb-ready`` → ``/ready``), in the order of the code's
    command table. Raises ValueError for a verb that has no Slack description."""
    names: dict[str, str] = {}
    for verb in USAGE:
        if verb not in SLASH:
            raise ValueError(f"the Slack command table has no description of /{verb}")
        names[f"/{slack_name(verb, prefix)}"] = f"/{verb}"
    return names


def slack_name(verb: str, prefix: str = "") -> str:
    """The name (without ``/``) Slack users type for ``verb``."""
    if verb == "help" and not prefix:
        return HELP_WITHOUT_PREFIX
    return prefix + verb


# Slash command → the verb the gate understands, without a command prefix (Slack reserves
# /help: it is /relbot-help).
COMMANDS: dict[str, str] = command_names()


class Renamer:
    """Says relbot's commands by their Slack names in a text (``/publish 3.14.1`` →
    ``/rb-publish 3.14.1``), and nothing else: a path (``docs/ready``) or a longer word
    (``/readyz``) stays as it is."""

    def __init__(self, prefix: str = "") -> None:
        self._names = {verb: slack_name(verb, prefix) for verb in USAGE}
        changed = sorted((v for v, n in self._names.items() if n != v), key=len, reverse=True)
        self._pattern = (
            re.compile(r"(?<![\w/.-])/(" + "|".join(changed) + r")(?![\w-])") if changed else None
        )

    def text(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: "/" + self._names[m[1]], text)

    def payload(self, value: Any) -> Any:
        """``value`` with every string in it renamed (a Block Kit payload, say)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.payload(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.payload(v) for v in value]
        return value


def manifest(
    prefix: str = "", mode: Literal["socket", "http"] = "socket", url: str | None = None
) -> str:
    """The Slack app manifest (YAML) for these command names. In HTTP mode every command and
    the Publish button are sent to ``url`` (``https://HOST/slack/events``)."""
    rename = Renamer(prefix)
    events = url or EVENTS_PLACEHOLDER
    options = f'command_prefix = "{prefix}", mode = "{mode}"'
    lines = [
        "# The relbot Slack app, written by `relbot slack-manifest` from relbot.toml's [slack]",
        f"# table ({options}). Create the app at",
        "# https://api.slack.com/apps → Create New App → From an app manifest, pick the",
        "# workspace, paste this. See docs/slack.md.",
        "#",
        "# Socket Mode: no public URL is needed; relbot connects out with an app-level token",
        '# (xapp-…, scope connections:write). HTTP mode (`mode = "http"`): Slack sends every',
        "# command and click to the url below.",
        "display_information:",
        "  name: relbot",
        "  description: Stages release files and publishes them all at once, when the release"
        " manager says so.",
        '  background_color: "#306998"',
        "  long_description: >-",
        "    relbot watches the release's staging area and keeps the release channel told what is",
        "    ready. Each role says " + rename.text("/ready") + " ROLE TAG once its files are"
        " staged; the release manager",
        "    types " + rename.text("/publish") + " TAG, checks the plan and presses Publish."
        " Every file then becomes public",
        "    at once, the release is registered on python.org and announced here. "
        + rename.text("/help"),
        "    lists the commands.",
        "features:",
        "  bot_user:",
        "    display_name: relbot",
        "    always_online: true",
        "  slash_commands:",
    ]
    for name, verb in command_names(prefix).items():
        description, hint = SLASH[verb.removeprefix("/")]
        lines += [
            f"    - command: {name}",
            f"      description: {_quoted(rename.text(description))}",
        ]
        if hint:
            lines.append(f"      usage_hint: {_quoted(hint)}")
        if mode == "http":
            lines.append(f"      url: {_quoted(events)}")
        lines.append("      should_escape: false")
    lines += ["oauth_config:", "  scopes:", "    bot:"]
    lines += [f"      - {scope}  # {why}" for scope, why in SCOPES]
    lines += [
        "settings:",
        "  interactivity:",
        "    is_enabled: true  # the Publish button",
    ]
    if mode == "http":
        lines.append(f"    request_url: {_quoted(events)}")
    lines += [
        "  org_deploy_enabled: false",
        f"  socket_mode_enabled: {'true' if mode == 'socket' else 'false'}",
        "  token_rotation_enabled: false",
    ]
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is a subset of it)."""
    return json.dumps(text, ensure_ascii=False)
