"""The gate's messages as Discord messages: a release's summary is an embed, a notice or an
answer is text (several lines in a code block, to keep their columns), and the people a
notice calls on are the only ones it may ping.

Pure functions of what the gate says: no I/O, and nothing that needs a connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import discord

from bot.domain.readiness import Readiness
from bot.ports.messages import ChannelKind, ChannelMessage
from bot.service.render import role_line

MAX_CONTENT = 2000  # Discord's limits on a message and on embed parts
MAX_TITLE = 256
MAX_DESCRIPTION = 4096
MAX_FIELD = 1024
# What the gate may answer in one reply (``Gate.handle``'s ``room``): one message, with the
# code block that keeps a several-line answer's columns (reply_content).
REPLY_ROOM = MAX_CONTENT - len("```\n\n```")


def channel_payload(message: ChannelMessage, people: Mapping[str, str]) -> dict[str, Any]:
    """The message as Discord parameters. The people it calls on are mentioned as ``<@id>``
    and only they may be pinged (anything else in the text, a hold reason, never pings)."""
    if message.kind is ChannelKind.SUMMARY:
        return {"content": None, "embed": summary_embed(message)}
    ids = [people[p] for p in message.mentions if people.get(p, "").isdigit()]
    named = [p for p in message.mentions if not people.get(p, "").isdigit()]
    called = "".join(f"<@{i}> " for i in ids) + "".join(
        f"{discord.utils.escape_markdown(p)} " for p in named
    )
    payload: dict[str, Any] = {
        "content": clip(called + discord.utils.escape_markdown(message.text), MAX_CONTENT)
    }
    if ids:  # else the client's default: nobody
        payload["allowed_mentions"] = discord.AllowedMentions(
            everyone=False,
            roles=False,
            replied_user=False,
            users=[discord.Object(int(i)) for i in ids],
        )
    return payload


def summary_embed(message: ChannelMessage) -> discord.Embed:
    """The readiness summary as an embed: the headline as title, one field per role, and the
    summary's lines after the roles (stray files, holds, signatures) as the description. A
    published release's summary carries no readiness: its headline is all there is."""
    lines = message.text.splitlines() or [message.tag or "relbot"]
    readiness = message.readiness
    embed = discord.Embed(title=clip(lines[0], MAX_TITLE), colour=_colour(readiness))
    if readiness is None:
        return embed
    for role in readiness.roles:
        word, detail = role_line(role, str(readiness.tag))
        embed.add_field(
            name=f"{role.role}: {word}",
            value=clip(discord.utils.escape_markdown(detail), MAX_FIELD),
            inline=False,
        )
    rest = [line.strip() for line in lines[1 + len(readiness.roles) :]]
    if rest:
        embed.description = clip(discord.utils.escape_markdown("\n".join(rest)), MAX_DESCRIPTION)
    return embed


def _colour(readiness: Readiness | None) -> discord.Colour:
    if readiness is None or readiness.publishable:  # published, or ready to be
        return discord.Colour.green()
    if readiness.holds:
        return discord.Colour.red()
    return discord.Colour.gold()


def reply_contents(text: str) -> list[str]:
    """A reply as messages: one, unless it is longer than a message holds (an announcement
    to read in full), then several, split at line ends, each its own code block."""
    fence = "```"
    room = MAX_CONTENT - 2 * len(fence) - 2
    if "\n" not in text or len(text) <= room:
        return [reply_content(text)]
    chunks = [""]
    for line in text.replace(fence, "'''").splitlines():
        while len(line) > room:  # a line longer than a message: cut it
            chunks += [line[:room], ""]
            line = line[room:]
        if len(chunks[-1]) + len(line) + 1 > room:
            chunks.append("")
        chunks[-1] += line + "\n"
    return [f"{fence}\n{chunk.rstrip()}\n{fence}" for chunk in chunks if chunk.strip()]


def reply_content(text: str) -> str:
    """A reply as message text: several lines (plans, summaries, help) keep their columns in
    a code block; one sentence stays prose."""
    if "\n" not in text:
        return clip(discord.utils.escape_markdown(text), MAX_CONTENT)
    fence = "```"
    body = clip(text.replace(fence, "'''"), MAX_CONTENT - 2 * len(fence) - 2)
    return f"{fence}\n{body}\n{fence}"


def plan_content(text: str, login_url: str | None) -> str:
    """The publish plan as message text. A plan that signs files ends with its login link,
    outside the code block (so Discord makes it a link) and never clipped away."""
    if login_url is None:
        return reply_content(text)
    link = f"\nLog in to sign: {login_url}"
    fence = "```"
    body = text.replace(login_url, "(the link below)").replace(fence, "'''")
    body = clip(body, MAX_CONTENT - len(link) - 2 * len(fence) - 2)
    return f"{fence}\n{body}\n{fence}{link}"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
