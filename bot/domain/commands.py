"""The chat command grammar: one line in, one command (or one sentence saying what is wrong).

Like prow's commands, the grammar is line-anchored: the line must start with the command.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.domain.login import LOGIN_RE
from bot.domain.tags import ReleaseTag, quote_input
from bot.domain.text import typed_text
from bot.errors import RelbotError, TagError

MAX_LINE = 1000
MAX_ANNOUNCE_LINE = 6000  # /announce carries the RM's own words for the announcement
CODE_RE = re.compile(r"[A-Z0-9]{6,12}")


class CommandError(RelbotError):
    """A line that is not a valid command; the message says what to type instead."""


@dataclass(frozen=True)
class Ready:
    role: str
    tag: ReleaseTag


@dataclass(frozen=True)
class Unready:
    role: str
    tag: ReleaseTag


@dataclass(frozen=True)
class Status:
    tag: ReleaseTag | None


@dataclass(frozen=True)
class Hold:
    tag: ReleaseTag
    reason: str


@dataclass(frozen=True)
class Unhold:
    tag: ReleaseTag


@dataclass(frozen=True)
class Publish:
    tag: ReleaseTag


@dataclass(frozen=True)
class Confirm:
    tag: ReleaseTag
    code: str
    # The code the Sigstore login page showed, when the plan signs files (as typed: its
    # case matters); None when none was given.
    login: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Respin:
    tag: ReleaseTag


@dataclass(frozen=True)
class Waive:
    tag: ReleaseTag
    target: str  # a role or a path, as typed
    reason: str


@dataclass(frozen=True)
class Unwaive:
    tag: ReleaseTag
    target: str


@dataclass(frozen=True)
class Abort:
    tag: ReleaseTag


@dataclass(frozen=True)
class Announce:
    tag: ReleaseTag
    words: str | None = None  # None: show the announcement; else the RM's part, as typed


@dataclass(frozen=True)
class Help:
    topic: str | None = None  # one command's verb: `/help ready`


Command = (
    Ready
    | Unready
    | Status
    | Hold
    | Unhold
    | Publish
    | Confirm
    | Respin
    | Waive
    | Unwaive
    | Abort
    | Announce
    | Help
)

# verb → (usage, example): help text and usage errors come from this one table.
USAGE: dict[str, tuple[str, str]] = {
    "ready": ("/ready ROLE TAG", "/ready macos 3.14.1"),
    "unready": ("/unready ROLE TAG", "/unready macos 3.14.1"),
    "status": ("/status [TAG]", "/status 3.14.1"),
    "hold": ("/hold TAG [reason…]", "/hold 3.14.1 macOS installer fails to notarize"),
    "unhold": ("/unhold TAG", "/unhold 3.14.1"),
    "publish": ("/publish TAG, then /publish TAG confirm <code> [<login>]", "/publish 3.14.1"),
    "respin": ("/respin TAG", "/respin 3.14.1"),
    "waive": (
        "/waive TAG PATH|ROLE [reason…]",
        "/waive 3.14.1 python-3.14.1-arm64.exe build broke",
    ),
    "unwaive": ("/unwaive TAG PATH|ROLE", "/unwaive 3.14.1 python-3.14.1-arm64.exe"),
    "abort": ("/abort TAG", "/abort 3.14.1"),
    "announce": (
        "/announce TAG [TEXT…]",
        "/announce 3.14.1 This is the first maintenance release of 3.14.",
    ),
    "help": ("/help [COMMAND]", "/help ready"),
}


def parse_command(line: str, roles: Sequence[str]) -> Command:
    """Parse one chat line; raises :class:`CommandError` with a sentence on anything else."""
    limit = MAX_ANNOUNCE_LINE if line.lstrip().lower().startswith("/announce ") else MAX_LINE
    if len(line) > limit:
        raise CommandError(
            f"That message is {len(line):,} characters long; a command is at most "
            f"{limit:,}. Type /help for the commands."
        )
    words = line.split()
    if not words:
        raise CommandError("Type a command such as /status or /help.")
    verb = words[0].lower()
    if not verb.startswith("/"):
        raise CommandError("Commands start with '/'; type /help for the list.")
    verb = verb[1:]
    if verb not in USAGE:
        raise _not_a_command(words[0], verb)
    args = words[1:]
    try:
        if verb == "announce" and args:
            return _announce(line)
        return _build(verb, args, roles)
    except TagError as err:
        raise CommandError(str(err)) from err


def _build(verb: str, args: list[str], roles: Sequence[str]) -> Command:
    match verb, args:
        case (("ready" | "unready"), [role, tag]):
            kind = Ready if verb == "ready" else Unready
            return kind(_role(role, roles), ReleaseTag.parse(tag.lower()))
        case "status", []:
            return Status(None)
        case "status", [tag]:
            return Status(ReleaseTag.parse(tag.lower()))
        case "hold", [tag, *reason]:
            return Hold(ReleaseTag.parse(tag.lower()), typed_text(reason))
        case "unhold", [tag]:
            return Unhold(ReleaseTag.parse(tag.lower()))
        case "publish", [tag]:
            return Publish(ReleaseTag.parse(tag.lower()))
        case "publish", [tag, word, code, *login] if word.lower() == "confirm" and len(login) < 2:
            parsed = ReleaseTag.parse(tag.lower())
            # Never echo the attempt: refusals must not print anything like a code.
            if not CODE_RE.fullmatch(code.upper()):
                raise CommandError(
                    "A confirmation code is 6 to 12 letters and digits; copy it from the "
                    f"publish plan, or type /publish {parsed} for a new plan."
                )
            if login and not LOGIN_RE.fullmatch(login[0]):
                raise CommandError(
                    "A login code is the code the login page showed, as it showed it (letters, "
                    f"digits and . _ ~ + / = -); log in again with the plan's link, then "
                    f"type /publish {parsed} confirm <code> <login>."
                )
            return Confirm(parsed, code.upper(), login[0] if login else None)
        case "respin", [tag]:
            return Respin(ReleaseTag.parse(tag.lower()))
        case "waive", [tag, target, *reason]:
            return Waive(ReleaseTag.parse(tag.lower()), _target(target, roles), typed_text(reason))
        case "unwaive", [tag, target]:
            return Unwaive(ReleaseTag.parse(tag.lower()), _target(target, roles))
        case "abort", [tag]:
            return Abort(ReleaseTag.parse(tag.lower()))
        case "help", []:
            return Help()
        case "help", [topic]:
            name = topic.lower().removeprefix("/")
            if name not in USAGE:
                raise _not_a_command(topic, name)
            return Help(name)
    usage, example = USAGE[verb]
    return _usage_error(usage, example)


def _announce(line: str) -> Announce:
    """``/announce TAG [TEXT…]``: the text is kept as typed (line breaks included), since it
    goes into the announcement word for word."""
    _verb, tag, *rest = line.strip().split(None, 2)
    return Announce(ReleaseTag.parse(tag.lower()), rest[0] if rest else None)


def _not_a_command(typed: str, verb: str) -> CommandError:
    """The refusal of an unknown verb, with ``(did you mean /ready?)`` for a near miss."""
    close = difflib.get_close_matches(verb, USAGE)  # the best first
    hint = f" (did you mean /{close[0]}?)" if close else ""
    return CommandError(f"{quote_input(typed)} is not a command{hint}; type /help for the list.")


def _usage_error(usage: str, example: str) -> Command:
    raise CommandError(f"Usage: {usage} (for example {example}).")


def _target(word: str, roles: Sequence[str]) -> str:
    """A waiver's target: a role (any case, like /ready) or a path (as typed, made safe: a
    staged name with an unsafe character is refused anyway, so it matches none)."""
    return word.lower() if word.lower() in roles else typed_text([word])


def _role(word: str, roles: Sequence[str]) -> str:
    role = word.lower()
    if role not in roles:
        raise CommandError(f"{quote_input(word)} is not a role; roles are {', '.join(roles)}.")
    return role
