"""The rule for each kind of value in the config: a URL, a path, a chat platform's ID, an
address to bind. Every key of a kind, in any table, calls the same rule; pure, used by the
tables (:mod:`bot.config.sections`) and by what checks an address met later (a redirect of
the release cycle's URL)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    Field,
)

from bot.domain.text import shown

_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# Slack's IDs: U or W for a user, C or G for a channel, then capitals and digits.
_SLACK_USER_RE = re.compile(r"[UW][A-Z0-9]{1,31}")
_SLACK_CHANNEL_RE = re.compile(r"[CG][A-Z0-9]{1,31}")
_SNOWFLAKE_RE = re.compile(r"[1-9][0-9]{16,19}")  # Discord's IDs: 17 to 20 digits
_HOST_LABEL_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_LOOPBACK_NAMES = ("localhost",)
_NAME_MAX = 255  # bytes in one path component (NAME_MAX)
_PATH_MAX = 4095  # bytes in a whole path (PATH_MAX, less the NUL)


# -- one rule per kind of value: every key of that kind, in any table, calls the same one -----


def url_problem(value: str) -> str:
    """Why ``value`` cannot be the address of a service relbot sends a secret or trusts an
    answer from ("" when it can): ``https://``, or ``http://`` to this machine only."""
    if any(char.isspace() for char in value):
        return f"{value!r} contains a space; write the URL alone"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as err:
        return f"{value!r} is not a URL ({err})"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not _SCHEME_RE.match(value):
        return f"{value!r} is not an https:// URL (only https://, or http:// to this machine)"
    host = parts.hostname or ""
    if not host:
        return f"{value!r} names no host"
    if parts.username is not None or parts.password is not None:
        return (
            f"{value!r} carries a user name or password; secrets come from the environment "
            "only, write the URL without them"
        )
    if port == 0:
        return f"{value!r} has port 0"
    if scheme == "http" and not is_loopback(host):
        return (
            f"{value!r} is plain http: the key or token would cross the network in clear "
            "text; use https:// (http:// is only for 127.0.0.1, ::1 or localhost)"
        )
    return ""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, as a URL gives it) is this machine."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def checked_url(value: str) -> str:
    """The pydantic rule of every URL key (:data:`ApiUrl`); raises ValueError."""
    if problem := url_problem(value):
        raise ValueError(problem)
    return value


def path_problem(value: str) -> str:
    """Why ``value`` cannot be a path ("" when it can): empty, a name longer than the
    filesystem allows (which makes every later ``stat`` fail), ``~user`` of nobody."""
    if not value:
        return "is empty; write a path"
    raw = value.encode("utf-8", "surrogateescape")
    if len(raw) > _PATH_MAX:
        return f"is {len(raw)} bytes long; a path is at most {_PATH_MAX}"
    for part in raw.split(b"/"):
        if len(part) > _NAME_MAX:
            return (
                f"has a name of {len(part)} bytes ({shown(part[:24].decode(errors='replace'))}"
                f"…); a file or folder name is at most {_NAME_MAX}"
            )
    if value.startswith("~"):
        try:
            Path(value).expanduser()
        except RuntimeError:
            return f"{value!r} names the home folder of a user this machine does not have"
    return ""


def checked_path(value: str) -> str:
    """The pydantic rule of every path key (:data:`PathText`); raises ValueError."""
    if problem := path_problem(value):
        raise ValueError(f"{shown(value[:60])!r} {problem}" if value else problem)
    return value


def _bind_address(value: str) -> str:
    every = "0.0.0.0 or :: (every interface, if that is meant)"
    if value in ("0.0.0.0", "::"):  # every interface: only when written so
        return value
    if not value:
        raise ValueError(
            f"an empty host listens on every interface; write 127.0.0.1 (this machine), or {every}"
        )
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        address = None
    if address is not None and address.is_unspecified:
        raise ValueError(f"{value!r} listens on every interface; write {every}")
    labels = value.removesuffix(".").split(".")
    if address is None and (
        len(value) > 253
        or labels[-1].isdigit()  # "0", "127.1": numbers that resolve to an address
        or not all(_HOST_LABEL_RE.fullmatch(label) for label in labels)
    ):
        raise ValueError(
            f"{value!r} is neither an address nor a host name; write 127.0.0.1, or {every}"
        )
    return value


def _id_rule(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    """The pydantic rule of one kind of platform ID: ``what`` says what it must look like."""

    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return check


_slack_user = _id_rule(
    _SLACK_USER_RE,
    "a Slack user ID (U or W, then capitals and digits, such as U01ABCDEF: the profile's "
    '"Copy member ID", not a display name)',
)
_slack_channel = _id_rule(
    _SLACK_CHANNEL_RE,
    "a Slack channel ID (C or G, then capitals and digits, such as C0123456789: the "
    "channel's details show it, not its #name)",
)
_snowflake = _id_rule(
    _SNOWFLAKE_RE,
    "a Discord ID (17 to 20 digits, such as 112233445566778899: Developer Mode's Copy ID)",
)


def _snowflake_number(value: int) -> int:
    _snowflake(str(value))
    return value


ApiUrl = Annotated[str, AfterValidator(checked_url)]
"""A URL key: ``https://``, or ``http://`` to this machine. Every URL key is of this type."""
PathText = Annotated[str, AfterValidator(checked_path)]
"""A path key (on this machine or the server): not empty, no name longer than allowed."""
SlackUser = Annotated[str, AfterValidator(_slack_user)]
SlackChannel = Annotated[str, AfterValidator(_slack_channel)]
DiscordId = Annotated[str, AfterValidator(_snowflake)]
DiscordIdNumber = Annotated[int, AfterValidator(_snowflake_number)]
BindHost = Annotated[str, AfterValidator(_bind_address)]
Port = Annotated[int, Field(ge=1, le=65535)]
