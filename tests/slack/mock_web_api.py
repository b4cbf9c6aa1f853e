"""A local stand-in for Slack's servers: the Web API methods relbot calls, and the
``response_url`` endpoints Slack hands out with each command and click.

A real HTTP server on 127.0.0.1 that records every call (and, for Socket Mode, a WebSocket
that delivers envelopes and records their acknowledgements) and enforces what Slack enforces that
matters here: a ``Bearer xoxb-…`` token, at most 50 blocks, 3000 characters per section, 150 per
header, 2000 per button value; and, when told to, answers 429 with ``Retry-After``.

Like a workspace, it knows its channels, who is in each, and its users, and it grants the bot
token a set of scopes (sent back in ``x-oauth-scopes`` as Slack does). A method called without
its scope answers ``missing_scope``; posting in a public channel the bot is not in answers
``not_in_channel``; a private channel it is not in, or an unknown one, ``channel_not_found``;
an archived one ``is_archived``; ``users.info`` of an unknown ID ``user_not_found``.
A message posted with ``metadata`` keeps it; ``conversations.history`` (newest first, at most
``limit``) shows it only when asked with ``include_all_metadata``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.doubles.api_descriptions import WHOLE, Allowance, Violations
from tests.doubles.api_descriptions import slack as slack_description

BOT_USER = "U0RELBOT"
BOT_ID = "B0RELBOT01"  # Slack's bot IDs are B and at least 8 more (its description's pattern)
TEAM = "T0TEAM"
# What the relbot app's manifest asks for (deploy/slack-app-manifest.yml).
APP_SCOPES = frozenset(
    {
        "commands",
        "chat:write",
        "channels:read",
        "groups:read",
        "users:read",
        "channels:history",
        "groups:history",
    }
)
# The scope each Web API method needs (https://api.slack.com/methods); conversations.info
# and conversations.history need the one of the channel's kind.
_NEEDS = {"chat.postMessage": "chat:write", "chat.update": "chat:write", "users.info": "users:read"}
_BY_KIND = {  # method → (scope for a public channel, scope for a private one)
    "conversations.info": ("channels:read", "groups:read"),
    "conversations.history": ("channels:history", "groups:history"),
}

# Where Slack's description (archived in 2021) lags the Web API as Slack documents it today.
_NEWER = "added after the description was archived"
ALLOWANCES = (
    Allowance("apps.connections.open", WHOLE, "Socket Mode's method: " + _NEWER),
    Allowance("chat.postMessage", "json.metadata", "message metadata (2022): " + _NEWER),
    Allowance("chat.postMessage", "form.metadata", "message metadata (2022): " + _NEWER),
    Allowance("chat.update", "json.metadata", "message metadata (2022): " + _NEWER),
    Allowance("chat.update", "form.metadata", "message metadata (2022): " + _NEWER),
    Allowance("conversations.history", "query.include_all_metadata", "message metadata: " + _NEWER),
    Allowance("conversations.history", "answer.messages[].metadata", "message metadata: " + _NEWER),
    # Slack's cursor pagination (documented for this method) is missing from the schema.
    Allowance("conversations.history", "answer.response_metadata", "the cursor is not described"),
    # Errors Slack documents for every method that the description's per-method lists omit:
    # a token without the method's scope (answered with the scopes needed and granted), and
    # the 429 of a rate limit ("ratelimited"; the description spells it "rate_limited").
    *(
        Allowance(method, field, "an error common to all methods", value)
        for method in (*_NEEDS, *_BY_KIND)
        for field, value in (
            ("answer.error", "missing_scope"),
            ("answer.needed", None),
            ("answer.provided", None),
            ("answer.error", "ratelimited"),
        )
    ),
    # Block Kit's refusal, newer than the description's lists of chat errors.
    Allowance("chat.postMessage", "answer.error", "Block Kit: " + _NEWER, "invalid_blocks"),
    Allowance("chat.update", "answer.error", "Block Kit: " + _NEWER, "invalid_blocks"),
)


@dataclass
class Channel:
    """A conversation of the workspace; ``members`` are user IDs (the bot's is BOT_USER)."""

    id: str
    name: str
    members: set[str] = field(default_factory=set)
    private: bool = False
    archived: bool = False

    def payload(self, viewer: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "is_channel": not self.private,
            "is_group": self.private,
            "is_private": self.private,
            "is_archived": self.archived,
            "is_member": viewer in self.members,
        }


@dataclass
class Call:
    """One request as Slack would have received it; ``status`` is what it answered."""

    path: str
    body: dict[str, Any]
    status: int = 200
    error: str | None = None
    verb: str = "POST"
    via: str = "form"  # where the arguments came: "query", "form" or "json"

    @property
    def accepted(self) -> bool:
        return self.status == 200 and self.error is None

    @property
    def method(self) -> str:
        return self.path.removeprefix("/api/")

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return list(self.body.get("blocks") or [])


@dataclass
class MockSlack:
    calls: list[Call] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)  # ts → latest body
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # ts → as posted
    url: str = ""
    channels: dict[str, Channel] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)  # ID → users.info's user
    scopes: set[str] = field(default_factory=lambda: set(APP_SCOPES))
    _rate_limited: dict[str, int] = field(default_factory=dict)
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _runner: web.AppRunner | None = None
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    views: list[dict[str, Any]] = field(default_factory=list)  # modals opened, in order
    # trigger_ids handed to the app with an interaction: each opens one view, once (Slack
    # also lets them expire after 3 s; tests act at once).
    triggers: set[str] = field(default_factory=set)
    # Every Web API call and its answer, held against Slack's description (ALLOWANCES aside).
    violations: Violations = field(default_factory=lambda: Violations(ALLOWANCES))

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)  # slack_sdk reads with GET
        app.router.add_post("/respond/{id}", self._respond)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        """Stops serving; fails if any call or answer disagreed with Slack's description."""
        for socket in self._sockets:
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()
        self.violations.assert_none("Slack")

    # -- what tests use ----------------------------------------------------------------------

    def add_channel(
        self, channel: str, name: str, *, bot_member: bool = True, private: bool = False
    ) -> Channel:
        """A channel of the workspace, with the bot in it unless ``bot_member`` is False."""
        added = Channel(channel, name, {BOT_USER} if bot_member else set(), private)
        self.channels[channel] = added
        return added

    def add_users(self, *ids: str) -> None:
        """Members of the workspace (people; the bot user is always there)."""
        for user in ids:
            self.users[user] = {
                "id": user,
                "team_id": TEAM,
                "name": user.lower(),
                "deleted": False,
                "is_bot": False,
            }

    @property
    def api_url(self) -> str:
        return self.url + "/api/"

    def response_url(self, name: str) -> str:
        return f"{self.url}/respond/{name}"

    def rate_limit(self, method: str, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` with 429 and ``Retry-After: 0``."""
        self._rate_limited[method] = times

    def ok(self, method: str) -> list[Call]:
        """Calls of ``method`` (``chat.postMessage``, ``chat.update``) that Slack accepted."""
        return [c for c in self.calls if c.method == method and c.accepted]

    def responses(self, name: str) -> list[dict[str, Any]]:
        """What relbot sent to one command's ``response_url``, in order."""
        return [c.body for c in self.calls if c.path == f"/respond/{name}" and c.accepted]

    async def send_envelope(
        self, kind: str, payload: dict[str, Any], envelope_id: str, retry_attempt: int = 0
    ) -> None:
        """Deliver one Socket Mode envelope to the connected app, as Slack does."""
        await self.wait_for(lambda mock: bool(mock._sockets))
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        await self._sockets[-1].send_json(envelope)

    def acks(self) -> list[str]:
        """Envelope ids the Socket Mode app acknowledged, in order."""
        return [str(c.body.get("envelope_id")) for c in self.calls if c.path == "/socket"]

    async def wait_for(self, predicate: Callable[[MockSlack], bool], timeout: float = 20.0) -> None:
        """Until ``predicate(self)`` holds (checked at every call); fails after ``timeout``."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self)), timeout)

    # -- Slack -------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await _body(request)
        via = {"GET": "query"}.get(request.method) or (
            "json" if request.content_type == "application/json" else "form"
        )
        call = Call(request.path, body, verb=request.method, via=via)
        auth = request.headers.get("Authorization", "")
        token_kind = "xapp-" if method == "apps.connections.open" else "xoxb-"
        if not auth.startswith(f"Bearer {token_kind}"):
            return await self._answer(call, 200, error="not_authed")
        if self._rate_limited.get(method):
            self._rate_limited[method] -= 1
            return await self._answer(call, 429, error="ratelimited", headers={"Retry-After": "0"})
        if method == "apps.connections.open":
            return await self._answer(call, 200, url=self.url.replace("http", "ws") + "/socket")
        if method == "auth.test":
            return await self._answer(
                call,
                200,
                url="https://python-release.slack.com/",
                team="Python release",
                user="relbot",
                team_id=TEAM,
                user_id=BOT_USER,
                bot_id=BOT_ID,
            )
        if method == "views.open":
            return await self._views_open(call)
        if method not in (*_NEEDS, *_BY_KIND):
            return await self._answer(call, 404, error="unknown_method")
        channel = self.channels.get(str(body.get("channel")))
        needed = _NEEDS.get(method)
        if method in _BY_KIND:
            public, private = _BY_KIND[method]
            needed = private if channel is not None and channel.private else public
        if needed not in self.scopes:
            return await self._answer(
                call, 200, error="missing_scope", needed=needed, provided=self._scope_list()
            )
        if method == "users.info":
            user = self.users.get(str(body.get("user")))
            if user is None:
                return await self._answer(call, 200, error="user_not_found")
            return await self._answer(call, 200, user=user)
        # A private channel the bot is not in is invisible to it, as an unknown one.
        if channel is None or (channel.private and BOT_USER not in channel.members):
            return await self._answer(call, 200, error="channel_not_found")
        if method == "conversations.info":
            return await self._answer(call, 200, channel=channel.payload(BOT_USER))
        if method == "conversations.history":
            if BOT_USER not in channel.members:
                return await self._answer(call, 200, error="not_in_channel")
            return await self._answer(call, 200, **self._history(channel, body))
        if channel.archived:
            return await self._answer(call, 200, error="is_archived")
        if BOT_USER not in channel.members:
            return await self._answer(call, 200, error="not_in_channel")
        problem = block_problem(body.get("blocks"))
        if problem is not None or not (body.get("text") or body.get("blocks")):
            return await self._answer(call, 200, error=problem or "no_text")
        if method == "chat.update":
            ts = str(body.get("ts"))
            if ts not in self.messages:
                return await self._answer(call, 200, error="message_not_found")
        else:
            ts = f"1800000000.{next(self._ts):06d}"
            if "metadata" in body:  # kept with the message; an edit without it keeps it
                self.metadata[ts] = _json_field(body["metadata"])
        self.messages[ts] = body
        text = str(body.get("text", ""))
        message = {"type": "message", "ts": ts, "user": BOT_USER, "bot_id": BOT_ID, "text": text}
        if method == "chat.update":  # Slack answers an edit with its text, and a short message
            return await self._answer(
                call, 200, channel=body.get("channel"), ts=ts, text=text, message={"text": text}
            )
        return await self._answer(call, 200, channel=body.get("channel"), ts=ts, message=message)

    def _history(self, channel: Channel, query: dict[str, Any]) -> dict[str, Any]:
        """``conversations.history``: the channel's messages, newest first, at most ``limit``
        (Slack's default 100); each message's metadata only with ``include_all_metadata``."""
        limit = int(query.get("limit") or 100)
        with_metadata = str(query.get("include_all_metadata", "")).lower() in ("1", "true")
        posted = [
            (ts, body)
            for ts, body in self.messages.items()
            if str(body.get("channel")) == channel.id
        ]
        posted.sort(key=lambda item: item[0], reverse=True)
        messages = []
        for ts, body in posted[:limit]:
            message: dict[str, Any] = {
                "type": "message",
                "ts": ts,
                "user": BOT_USER,
                "bot_id": BOT_ID,
                "text": body.get("text", ""),
            }
            if with_metadata and ts in self.metadata:
                message["metadata"] = self.metadata[ts]
            messages.append(message)
        more = len(posted) > limit
        return {
            "messages": messages,
            "has_more": more,
            "pin_count": 0,
            "channel_actions_ts": None,
            "channel_actions_count": 0,
            "response_metadata": {"next_cursor": "more" if more else ""},
        }

    async def _views_open(self, call: Call) -> web.Response:
        """``views.open``: a known, unused trigger_id and a modal within Block Kit's limits."""
        trigger = str(call.body.get("trigger_id"))
        if trigger not in self.triggers:
            return await self._answer(call, 200, error="invalid_trigger_id")
        view = call.body.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        problem = view_problem(view)
        if problem is not None:
            return await self._answer(call, 200, error=problem)
        assert isinstance(view, dict)  # view_problem refuses anything else
        self.triggers.discard(trigger)
        self.views.append(view)
        return await self._answer(call, 200, view={**view, "id": f"V{len(self.views):04d}"})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        await socket.send_json({"type": "hello", "num_connections": 1})
        async with self._changed:
            self._sockets.append(socket)
            self._changed.notify_all()
        async for message in socket:
            if message.type is WSMsgType.TEXT:
                await self._record(Call("/socket", json.loads(message.data)))
        return socket

    async def _respond(self, request: web.Request) -> web.Response:
        call = Call(request.path, await _body(request))
        problem = block_problem(call.body.get("blocks"))
        if problem is not None:
            call.status, call.error = 400, problem
        await self._record(call)
        return web.Response(status=call.status, text=problem or "ok")

    async def _answer(
        self,
        call: Call,
        status: int,
        *,
        error: str | None = None,
        headers: dict[str, str] | None = None,
        **fields: Any,
    ) -> web.Response:
        call.status, call.error = status, error
        await self._record(call)
        # Slack answers the code alone ("invalid_blocks"); the double's detail stays in the Call.
        code = error.split(":")[0] if error else None
        payload = {"ok": error is None, **({"error": code} if code else {}), **fields}
        self.violations.add(
            slack_description().check(call.method, call.verb, call.via, call.body, payload)
        )
        headers = {**(headers or {}), "x-oauth-scopes": self._scope_list()}
        return web.json_response(payload, status=status, headers=headers)

    def _scope_list(self) -> str:
        return ",".join(sorted(self.scopes))

    async def _record(self, call: Call) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()


def block_problem(blocks: object) -> str | None:
    """What Slack would answer ``invalid_blocks`` for, in the limits relbot can hit."""
    if blocks is None:
        return None
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    if not isinstance(blocks, list):
        return "invalid_blocks: not a list"
    if len(blocks) > 50:
        return f"invalid_blocks: {len(blocks)} blocks, at most 50"
    for block in blocks:
        kind = block.get("type")
        text = (block.get("text") or {}).get("text", "")
        if kind == "section" and len(text) > 3000:
            return f"invalid_blocks: section text of {len(text)} characters"
        if kind == "header" and len(text) > 150:
            return f"invalid_blocks: header of {len(text)} characters"
        for element in block.get("elements", []):
            if len(str(element.get("value", ""))) > 2000:
                return "invalid_blocks: button value longer than 2000"
    return None


def view_problem(view: object) -> str | None:
    """What Slack would refuse a modal for, in the limits relbot can hit."""
    if not isinstance(view, dict) or view.get("type") != "modal":
        return "invalid_arguments: view must be a modal"
    for key in ("title", "submit", "close"):
        text = (view.get(key) or {}).get("text", "")
        if key == "title" and not text:
            return "invalid_arguments: a modal needs a title"
        if len(text) > 24:
            return f"invalid_arguments: {key} longer than 24 characters"
    if len(str(view.get("private_metadata", ""))) > 3000:
        return "invalid_arguments: private_metadata longer than 3000 characters"
    blocks = view.get("blocks") or []
    for block in blocks:
        if block.get("type") == "input" and not (block.get("label") and block.get("element")):
            return "invalid_blocks: an input block needs a label and an element"
    return block_problem(blocks)


def _json_field(value: object) -> Any:
    """A structured argument: JSON in a JSON body, a JSON string in a form."""
    return json.loads(value) if isinstance(value, str) else value


async def _body(request: web.Request) -> dict[str, Any]:
    if request.method == "GET":
        return dict(request.query)
    if request.content_type == "application/json":
        data = await request.json()
        return dict(data) if isinstance(data, dict) else {}
    form = await request.post()
    return {k: str(v) for k, v in form.items()}
