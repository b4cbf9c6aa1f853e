"""Platform-neutral messages: what the gate answers and posts. Adapters render them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.domain.plan import PublishPlan
    from bot.domain.readiness import Readiness


class Tone(StrEnum):
    INFO = "info"
    SUCCESS = "success"
    REFUSAL = "refusal"  # shown only to whoever typed the command (ephemeral)


@dataclass(frozen=True)
class ConfirmPrompt:
    """The publish plan's call to action: the exact line, or a button carrying the code.
    With ``login_url`` the plan signs files: the RM logs in there and adds the code the
    login page shows (a field of the confirm dialog on Slack and Discord)."""

    tag: str
    code: str
    login_url: str | None = None

    @property
    def line(self) -> str:
        """The line to type, without the login code."""
        return f"/publish {self.tag} confirm {self.code}"

    @property
    def shown(self) -> str:
        """The line as the plan shows it: ``<login>`` stands for the login page's code."""
        return f"{self.line} <login>" if self.login_url else self.line

    def with_login(self, login: str) -> str:
        """The confirmation typed with the login page's code."""
        return f"{self.line} {login}"


@dataclass(frozen=True)
class Reply:
    """The answer to one command, for whoever typed it."""

    text: str
    tone: Tone = Tone.INFO
    plan: PublishPlan | None = None
    confirm: ConfirmPrompt | None = None
    refusal: str = "rule"  # why it was refused, for metrics: one of REFUSAL_REASONS
    # /status: each release's summary as the channel shows it (rich platforms render these)
    summaries: tuple[ChannelMessage, ...] = ()
    # /publish: what follows the registration (the check of the public files, the release
    # page, the announcement), lines the plain text has too; rich platforms show them apart
    notes: tuple[str, ...] = ()

    @property
    def private(self) -> bool:
        return self.tone is Tone.REFUSAL


class ChannelKind(StrEnum):
    SUMMARY = "summary"  # one per release, edited in place
    NOTICE = "notice"  # claim withdrawn, hold, scheduler trouble
    ANNOUNCEMENT = "announcement"  # published


@dataclass(frozen=True)
class Once:
    """The mark of a channel message that must be posted once, whatever moment the bot dies:
    the post carries it (Slack: the message's metadata; Discord: a nonce and a last line),
    and a later attempt finds it in the channel before posting again. ``publish`` tells one
    publish of ``tag`` from another (late files are announced too)."""

    event: str  # what it is, as Slack's metadata event_type: relbot_announcement
    tag: str
    publish: str

    @property
    def line(self) -> str:
        """The mark as text, for a platform that keeps nothing but the text."""
        return f"{self.event} {self.tag} {self.publish}"

    @property
    def nonce(self) -> str:
        """A short token of the mark (Discord's nonce: at most 25 characters)."""
        return hashlib.sha256(self.line.encode()).hexdigest()[:25]


@dataclass(frozen=True)
class ChannelMessage:
    """A post in the release channel. A summary carries the readiness it shows, except once
    the release is published; a notice names the people it calls on; ``once`` marks a message
    that must be posted once (the announcement)."""

    kind: ChannelKind
    tag: str | None
    text: str
    readiness: Readiness | None = None
    # People (config names) who must act on it: each platform notifies them its own way
    # (Slack <@U…>, Discord <@id>, the console @name).
    mentions: tuple[str, ...] = ()
    once: Once | None = None
