"""The release channel on Slack, and the sentences for what only the operator can fix there
(the bot not in the channel, a scope missing, the token refused)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.platform import ChannelRefused
from adapters.slack.blocks import channel_payload
from adapters.slack.commands import Renamer
from bot.ports.messages import ChannelMessage, Once

log = logging.getLogger(__name__)


class SlackChat:
    """The release channel on Slack: ``chat.postMessage`` returns the ``ts`` that
    ``chat.update`` later edits (the readiness summary is edited in place)."""

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        people: Mapping[str, str] | None = None,
        rename: Renamer | None = None,
    ) -> None:
        self._client = client
        self._channel = channel
        self._people = dict(people or {})  # person → Slack user ID, for mentions
        self._rename = rename or Renamer()  # the commands by their names on this workspace

    def _payload(self, message: ChannelMessage) -> dict[str, Any]:
        payload: dict[str, Any] = self._rename.payload(channel_payload(message, self._people))
        return payload

    async def post(self, message: ChannelMessage) -> str:
        """Post ``message``; returns its ``ts``. A message marked ``once`` carries its mark
        as the message's metadata, and is not posted when the channel's last
        :data:`LOOK_BACK` messages hold one with that mark (its ``ts`` is returned). Raises
        :class:`ChannelRefused` when Slack refuses for a reason the operator must fix,
        ``SlackApiError`` for any other refusal."""
        payload = self._payload(message)
        if message.once is not None:
            found = await self._find(message.once)
            if found is not None:
                return found
            payload["metadata"] = metadata(message.once)
        with operator_fixes(self._channel):
            response = await self._client.chat_postMessage(channel=self._channel, **payload)
        return str(response["ts"])

    async def _find(self, once: Once) -> str | None:
        """The ``ts`` of a recent message of the channel marked ``once``, if there is one.
        Without the history scope the bot cannot look: it posts, and says what to add."""
        try:
            answer = await self._client.conversations_history(
                channel=self._channel, include_all_metadata=True, limit=LOOK_BACK
            )
        except SlackApiError as err:
            fix = operator_fix(error_code(err), self._channel, err.response.get("needed"))
            if error_code(err) != "missing_scope":
                if fix is None:
                    raise
                raise ChannelRefused(fix) from err
            log.warning("%s Without it, a bot restarted while announcing may repeat it.", fix)
            return None
        wanted = metadata(once)
        for posted in answer.get("messages") or []:
            if posted.get("metadata") == wanted:
                return str(posted["ts"])
        return None

    async def update(self, ref: str, message: ChannelMessage) -> None:
        """Replace the message posted as ``ref``; raises as :meth:`post` does."""
        with operator_fixes(self._channel):
            await self._client.chat_update(channel=self._channel, ts=ref, **self._payload(message))

    async def probe(self) -> str | None:
        """Whether a post would go through now (``conversations.info``): None, the sentence
        with the fix, or "" when Slack cannot be reached."""
        try:
            answer = await self._client.conversations_info(channel=self._channel)
        except SlackApiError as err:
            return operator_fix(error_code(err), self._channel, err.response.get("needed")) or ""
        except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError):
            return ""
        channel = answer.get("channel") or {}
        if channel.get("is_archived"):
            return operator_fix("is_archived", self._channel)
        if not channel.get("is_member"):
            return operator_fix("not_in_channel", self._channel)
        return None


# How many of the channel's last messages are searched for a message's mark before posting
# it again: the announcement is looked for right after a restart, a few posts later at most.
LOOK_BACK = 200


def metadata(once: Once) -> dict[str, Any]:
    """Slack's message metadata carrying the mark ``once``."""
    return {"event_type": once.event, "event_payload": {"tag": once.tag, "publish": once.publish}}


# Slack's errors that every later call would get too, until the operator acts.
_TOKEN_REFUSED = frozenset(
    {"not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired"}
)


def operator_fix(code: str, channel: str, needed: str | None = None) -> str | None:
    """The sentence, with the fix, for a Slack ``error`` only the operator can fix (about
    ``channel``, or the scope ``needed``); None for any other error."""
    if code == "not_in_channel":
        return (
            f"slack.channel: the bot is not a member of channel {channel}; invite it "
            "(type /invite @relbot in that channel)."
        )
    if code == "channel_not_found":
        return (
            f"slack.channel: Slack shows the bot no channel {channel}; check the ID (the "
            "channel's details, at the bottom), and invite the bot if the channel is private."
        )
    if code == "is_archived":
        return f"slack.channel: channel {channel} is archived; unarchive it or name another."
    if code == "missing_scope":
        return (
            f"slack: the app lacks the scope {needed or 'that this needs'}; add it under OAuth "
            "& Permissions (or recreate the app from `relbot slack-manifest`) and reinstall "
            "the app."
        )
    if code == "restricted_action":
        return (
            f"slack.channel: the workspace does not let the bot post in {channel}; let apps "
            "post there (the channel's settings) or name another channel."
        )
    if code in _TOKEN_REFUSED:
        return (
            f"slack.bot_token_env: Slack refused the bot token ({code}); copy the Bot User "
            "OAuth Token (xoxb-…) again from the app's OAuth & Permissions page."
        )
    return None


@contextlib.contextmanager
def operator_fixes(channel: str) -> Iterator[None]:
    """Turn a ``SlackApiError`` that only the operator can fix into :class:`ChannelRefused`."""
    try:
        yield
    except SlackApiError as err:
        fix = operator_fix(error_code(err), channel, err.response.get("needed"))
        if fix is None:
            raise
        raise ChannelRefused(fix) from err


def error_code(err: SlackApiError) -> str:
    return str(err.response.get("error", "error"))
