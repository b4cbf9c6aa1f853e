"""What Slack delivers, answered: each slash command is acknowledged at once (Slack wants it
within 3 seconds), handed to the gate as ``(Slack user ID, command line)``, and answered
through its ``response_url``; a redelivery is acknowledged and dropped, so every command acts
once."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from adapters.slack.blocks import REPLY_ROOM, reply_payload, unescape
from adapters.slack.commands import Renamer
from bot.errors import RelbotError
from bot.ports.messages import Reply, Tone
from bot.service.gate import Gate

log = logging.getLogger(__name__)

PLATFORM = "slack"


# Answers to questions stay with whoever asked; changes are shown to the channel. The
# announcement is the RM's draft until the publish posts it: kept with the RM.
_QUESTIONS = frozenset({"/status", "/help", "/announce"})


class SeenDeliveries:
    """Ids of deliveries already handled, the oldest forgotten past ``size``.

    Slack redelivers what it thinks was not acknowledged in time; a redelivery carries the
    same ``event_id`` or ``trigger_id`` as the original.
    """

    def __init__(self, size: int = 2048) -> None:
        self._size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def first_time(self, delivery: str) -> bool:
        """True the first time ``delivery`` is seen, False for every repeat."""
        if delivery in self._ids:
            self._ids.move_to_end(delivery)
            return False
        self._ids[delivery] = None
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return True


class Listeners:
    """The listeners bolt calls for the slash commands, and what every listener uses: the
    gate's answer, the answer sent, and a count of the listeners under way."""

    def __init__(self, commands: Mapping[str, str], rename: Renamer, seen: SeenDeliveries) -> None:
        self.gate: Gate | None = None  # the platform's start() gives it
        self._commands = dict(commands)  # slash command → the gate's verb
        self._rename = rename
        self._seen = seen
        self._running: set[asyncio.Task[Any]] = set()

    async def once(
        self,
        body: dict[str, Any],
        request: AsyncBoltRequest,
        next: Callable[[], Awaitable[None]],  # bolt injects arguments by name
    ) -> BoltResponse | None:
        """Global middleware (after signature verification): a redelivery is acknowledged
        and dropped, so every command acts once."""
        delivery = _delivery_id(body)
        retried = request.headers.get("x-slack-retry-num") is not None
        if (delivery is None and retried) or (
            delivery is not None and not self._seen.first_time(delivery)
        ):
            log.info("slack: dropped a repeated delivery (%s)", delivery or "retry")
            return BoltResponse(status=200, body="")
        await next()
        return None

    async def on_command(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond
    ) -> None:
        self.track()
        await ack()  # Slack wants an answer within 3 s; the gate may take longer
        verb = self._commands[command["command"]]
        text = unescape(str(command.get("text") or "")).strip()
        line = f"{verb} {text}" if text else verb
        reply = await self.ask(str(command["user_id"]), line)
        public = not reply.private and reply.confirm is None and verb not in _QUESTIONS
        await self.respond(respond, reply_payload(reply), public=public)

    async def ask(self, user: str, line: str) -> Reply:
        """The gate's answer; a failure inside relbot still gets the user an answer."""
        assert self.gate is not None, "start() sets the gate"
        try:
            return await self.gate.handle(PLATFORM, user, line, room=REPLY_ROOM)
        except RelbotError as err:
            log.warning("slack: %s failed: %s", line.split()[0], err)
            return Reply(str(err), Tone.REFUSAL)
        except Exception:  # the user must hear back; the traceback goes to the log
            log.exception("slack: %s failed", line.split()[0])
            return Reply("relbot failed to carry that out; its log has the details.", Tone.REFUSAL)

    async def respond(
        self,
        respond: AsyncRespond,
        payload: Mapping[str, Any],
        *,
        public: bool = False,
        replace: bool = False,
    ) -> None:
        payload = self._rename.payload(payload)  # the commands as typed on this workspace
        response = await respond(
            text=payload["text"],
            blocks=payload.get("blocks"),
            response_type="in_channel" if public else "ephemeral",
            replace_original=replace,
        )
        if response.status_code != 200:
            log.warning("slack: response_url answered %d: %s", response.status_code, response.body)

    def track(self) -> None:
        """Count the listener under way (bolt runs it as a task of its own) for ``drain``."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def drain(self) -> None:
        """Wait until every command and click received so far has been answered."""
        while self._running:
            await asyncio.wait(set(self._running))


def _delivery_id(body: Mapping[str, Any]) -> str | None:
    """What identifies one delivery across Slack's retries."""
    for key in ("event_id", "trigger_id"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return f"{key}:{value}"
    actions = body.get("actions")
    if isinstance(actions, list) and actions and isinstance(actions[0], dict):
        stamp = actions[0].get("action_ts")
        if isinstance(stamp, str):
            return f"action_ts:{stamp}"
    return None
