"""A local stand-in for Discord: the REST API and the gateway websocket on 127.0.0.1, enough
for the real discord.py client to log in, sync commands, receive interactions and answer them.

    async with MockDiscord(guild=1, channel=2, token="t") as discord:
        ...  # point the bot at discord.api_url (REST; /gateway/bot names the websocket)
        sent = await discord.command("ready", user="42", role="source", tag="3.14.1")
        reply = await discord.reply(sent)          # the bot's answer to that interaction
        discord.channel_messages                    # the channel as it stands (edits applied)
        discord.calls                               # every REST call, in order

What it enforces, as Discord does: ``Authorization: Bot TOKEN`` on REST and the token in
IDENTIFY; JSON answers with exactly ``Content-Type: application/json`` (discord.py parses
nothing else); one callback per interaction (a second is a 400 "already acknowledged");
modals within Discord's limits (title and label 45 characters, description 100, at most 5
components); followups only on an acknowledged interaction; a component interaction carries its
message. Like a server, it knows its members (the bot among them), its roles and the channel's
permission overwrites, and it computes the bot's permissions in the channel as Discord does:
reading the channel needs View Channel (else 403 Missing Access, 50001), posting needs Send
Messages too (else 403 Missing Permissions, 50013); a bot that is not in the server gets 403
Missing Access for the server, its members and its channel; a user who is not a member, 404
Unknown Member.
A message sent with a ``nonce`` gets it back in the answer (never in the history that
``GET /channels/{id}/messages`` reads, newest first, empty without Read Message History); with
``enforce_nonce`` the same nonce within a few minutes answers the message it made instead of
posting another (:meth:`MockDiscord.pass_nonce_window` lets those minutes pass).
What it leaves out: rate limits, zlib compression (discord.py reads text frames as they come),
RESUME (answered with INVALID_SESSION), and every route the bot does not use.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import WSMsgType, web

from tests.doubles.api_descriptions import DISCORD, Allowance, Exchange, Violations, openapi

API = "/api/v10"
APP_ID = 900000000000000001
BOT_ID = APP_ID
TIMESTAMP = "2026-01-01T00:00:00.000000+00:00"
EPHEMERAL = 1 << 6
VIEW_CHANNEL, SEND_MESSAGES, EMBED_LINKS, ADMINISTRATOR = 1 << 10, 1 << 11, 1 << 14, 1 << 3
READ_MESSAGE_HISTORY = 1 << 16
# What @everyone may do in a new server (Discord's defaults include these four).
EVERYONE = VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS | READ_MESSAGE_HISTORY
# How long Discord holds a nonce sent with enforce_nonce ("the past few minutes").
NONCE_WINDOW = 300.0
WAIT = 5.0  # seconds any wait for the bot gives up after
# What discord.py sends that Discord's description does not name (Discord ignores or takes it):
# each on the one operation where relbot's calls carry it.
_LIBRARY = "sent by discord.py 2.x, not named by the description"
ALLOWANCES: tuple[Allowance, ...] = (
    Allowance("bulk_set_guild_application_commands", "body[].nsfw", _LIBRARY),
    Allowance("create_message", "body.embeds[].flags", _LIBRARY),
    Allowance("update_message", "body.embeds[].flags", _LIBRARY),
    Allowance("update_message", "body.tts", _LIBRARY + " (every edit carries tts=false)"),
    Allowance(
        "update_original_webhook_message", "body.tts", _LIBRARY + " (every edit carries tts)"
    ),
    # Snowflakes as JSON numbers (the description says strings; Discord takes both).
    Allowance("create_message", "body.allowed_mentions", "user IDs as numbers: " + _LIBRARY),
)


@dataclass(frozen=True)
class Call:
    """One REST request the bot made."""

    method: str
    path: str  # below /api/v10, e.g. /channels/2/messages
    body: Any


@dataclass
class Sent:
    """An interaction pushed to the bot."""

    id: int
    token: str
    payload: dict[str, Any]


@dataclass
class _Socket:
    ws: web.WebSocketResponse
    sequence: int = 0
    identified: bool = False
    intents: int | None = None


@dataclass
class _Recorder:
    calls: list[Call] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)


class MockDiscord:
    def __init__(self, *, guild: int, channel: int, token: str) -> None:
        self.guild = guild
        self.channel = channel
        self.token = token
        self.channel_messages: dict[int, dict[str, Any]] = {}
        self.commands: list[dict[str, Any]] = []  # as last synced to the guild
        self.identifies: list[dict[str, Any]] = []
        # The server: member ID → role IDs; role ID → permission bits (@everyone's ID is the
        # server's); the channel's overwrites as Discord lists them (type 0 role, 1 member).
        self.members: dict[str, list[str]] = {str(BOT_ID): []}
        self.roles: dict[str, int] = {str(guild): EVERYONE}
        self.overwrites: list[dict[str, Any]] = []
        self._recorder = _Recorder()
        self._ids = itertools.count(1_300_000_000_000_000_000)
        self._acknowledged: dict[str, dict[str, Any]] = {}  # token -> callback body
        self._originals: dict[str, dict[str, Any]] = {}  # token -> its original response
        self._followups: dict[str, list[dict[str, Any]]] = {}  # token -> messages sent
        self._sockets: list[_Socket] = []
        self._runner: web.AppRunner | None = None
        self.port = 0
        # Nonces sent with enforce_nonce: (author, nonce) → (message ID, when it was sent).
        self._nonces: dict[tuple[str, str], tuple[int, float]] = {}
        self.clock: Callable[[], float] = time.monotonic
        # Every REST call and its answer, held against Discord's description.
        self.violations = Violations(ALLOWANCES)

    # -- lifecycle -----------------------------------------------------------------------------

    async def __aenter__(self) -> MockDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        routes = [
            ("GET", "/users/@me", self._me),
            ("GET", "/oauth2/applications/@me", self._application),
            ("GET", "/gateway/bot", self._gateway_bot),
            ("PUT", "/applications/{app}/guilds/{guild}/commands", self._sync),
            ("POST", "/interactions/{id}/{token}/callback", self._callback),
            ("POST", "/webhooks/{app}/{token}", self._followup),
            ("PATCH", "/webhooks/{app}/{token}/messages/@original", self._edit_original),
            ("GET", "/guilds/{guild}", self._get_guild),
            ("GET", "/guilds/{guild}/members/{user}", self._get_member),
            ("GET", "/channels/{channel}", self._get_channel),
            ("POST", "/channels/{channel}/messages", self._post_message),
            ("GET", "/channels/{channel}/messages", self._get_messages),
            ("PATCH", "/channels/{channel}/messages/{message}", self._edit_message),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, API + path, self._recorded(handler))
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for socket in list(self._sockets):
            await socket.ws.close()
        assert self._runner is not None
        await self._runner.cleanup()
        if kind is None:  # a test that failed already says why
            self.violations.assert_none("Discord")

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    @property
    def calls(self) -> list[Call]:
        return list(self._recorder.calls)

    def calls_to(self, method: str, prefix: str) -> list[Call]:
        return [c for c in self._recorder.calls if c.method == method and c.path.startswith(prefix)]

    @property
    def connected(self) -> int:
        """How many gateway sessions are open and identified."""
        return sum(1 for s in self._sockets if s.identified and not s.ws.closed)

    # -- what a test does ----------------------------------------------------------------------

    def add_members(self, *ids: str) -> None:
        """People who joined the server (with no role but @everyone)."""
        for user in ids:
            self.members.setdefault(user, [])

    def deny_in_channel(self, permissions: int) -> None:
        """The channel's overwrite for @everyone denies ``permissions``."""
        overwrite = {"id": str(self.guild), "type": 0, "allow": "0", "deny": str(permissions)}
        self.overwrites.append(overwrite)

    async def channel_updated(self) -> None:
        """Tell the connected bots the channel changed (its overwrites), as Discord does."""
        for socket in [s for s in self._sockets if s.identified and not s.ws.closed]:
            await self._dispatch(socket, "CHANNEL_UPDATE", self._channel_payload())

    def permissions(self, user: str) -> int:
        """``user``'s permissions in the channel: the server's roles, then the channel's
        overwrites for @everyone, for their roles, for them (Discord's documented order)."""
        roles = self.members.get(user)
        if roles is None:
            return 0
        base = self.roles.get(str(self.guild), 0)
        for role in roles:
            base |= self.roles.get(role, 0)
        if base & ADMINISTRATOR:
            return ~0
        by_id = {o["id"]: (int(o["allow"]), int(o["deny"])) for o in self.overwrites}
        allow, deny = by_id.get(str(self.guild), (0, 0))
        base = (base & ~deny) | allow
        allow = deny = 0
        for role in roles:
            role_allow, role_deny = by_id.get(role, (0, 0))
            allow, deny = allow | role_allow, deny | role_deny
        base = (base & ~deny) | allow
        allow, deny = by_id.get(user, (0, 0))
        return (base & ~deny) | allow

    async def command(self, name: str, *, user: str, **options: str) -> Sent:
        """A user runs a slash command of the guild with these options."""
        synced = next(c for c in self.commands if c["name"] == name)
        data = {
            "id": synced["id"],
            "name": name,
            "type": 1,
            "guild_id": str(self.guild),
            "options": [{"name": k, "type": 3, "value": v} for k, v in options.items()],
        }
        return await self._interact(2, user, data)

    async def autocomplete(self, name: str, *, user: str, focused: str, **options: str) -> Sent:
        """A user types in option ``focused`` of a slash command."""
        synced = next(c for c in self.commands if c["name"] == name)
        opts = [
            {"name": k, "type": 3, "value": v, **({"focused": True} if k == focused else {})}
            for k, v in options.items()
        ]
        data = {"id": synced["id"], "name": name, "type": 1, "guild_id": str(self.guild)}
        return await self._interact(4, user, {**data, "options": opts})

    async def click(self, custom_id: str, *, user: str, message: dict[str, Any]) -> Sent:
        """A user clicks the button ``custom_id`` on ``message`` (as the bot sent it)."""
        data = {"custom_id": custom_id, "component_type": 2}
        return await self._interact(3, user, data, message=message)

    async def submit_modal(
        self, modal: dict[str, Any], *, user: str, message: dict[str, Any], values: dict[str, str]
    ) -> Sent:
        """A user fills in the text inputs of ``modal`` (as the bot sent it, opened from a
        button on ``message``) and submits it: ``values`` by the inputs' custom IDs."""
        components = []
        for n, (custom_id, value) in enumerate(values.items()):
            component = {"type": 4, "id": 2 * n + 2, "custom_id": custom_id, "value": value}
            components.append({"type": 18, "id": 2 * n + 1, "component": component})
        data = {"custom_id": modal["custom_id"], "components": components}
        return await self._interact(5, user, data, message=message)

    def modal(self, sent: Sent) -> dict[str, Any] | None:
        """The modal the bot answered an interaction with, if it did."""
        callback = self._acknowledged.get(sent.token)
        return callback["data"] if callback is not None and callback["type"] == 9 else None

    async def reply(self, sent: Sent) -> dict[str, Any]:
        """The bot's answer to an interaction, as the message Discord made of it: the first
        followup, or the message of an immediate response."""

        def answer() -> dict[str, Any] | None:
            if self._followups.get(sent.token):
                return self._followups[sent.token][0]
            callback = self._acknowledged.get(sent.token)
            if callback is not None and callback["type"] == 4:
                return self._originals[sent.token]
            return None

        result: dict[str, Any] = await self.wait_for(answer)
        return result

    async def replies(self, sent: Sent, count: int) -> list[dict[str, Any]]:
        """The first ``count`` followup messages of an interaction (a long answer is sent in
        several), once they have all arrived."""

        def arrived() -> list[dict[str, Any]] | None:
            sent_so_far = self._followups.get(sent.token, [])
            return sent_so_far[:count] if len(sent_so_far) >= count else None

        result: list[dict[str, Any]] = await self.wait_for(arrived)
        return result

    def callback(self, sent: Sent) -> dict[str, Any] | None:
        """How the bot acknowledged an interaction, if it has."""
        return self._acknowledged.get(sent.token)

    def originals_edited(self, sent: Sent) -> list[dict[str, Any]]:
        path = f"/webhooks/{APP_ID}/{sent.token}/messages/@original"
        return [c.body for c in self._recorder.calls if c.method == "PATCH" and c.path == path]

    async def wait_for(self, found: Callable[[], Any], timeout: float = WAIT) -> Any:
        """Wait (at most ``timeout`` seconds) until ``found()`` returns something not None."""
        async with asyncio.timeout(timeout):
            async with self._recorder.changed:
                while (result := found()) is None:
                    await self._recorder.changed.wait()
                return result

    # -- REST ----------------------------------------------------------------------------------

    def _recorded(self, handler: Callable[[web.Request, Any], Any]) -> Callable[[web.Request], Any]:
        async def recorded(request: web.Request) -> web.StreamResponse:
            if request.headers.get("Authorization") != f"Bot {self.token}" and not (
                request.path.startswith(API + "/webhooks/")
                or request.path.startswith(API + "/interactions/")
            ):
                return _json({"message": "401: Unauthorized", "code": 0}, status=401)
            raw = await request.read() if request.can_read_body else b""
            body = json.loads(raw) if raw else None
            response: web.StreamResponse = await handler(request, body)
            answer = response.body if isinstance(response, web.Response) else b""
            exchange = Exchange(
                request.method,
                request.path,
                dict(request.query),
                dict(request.headers),
                raw,
                request.content_type,
                response.status,
                answer if isinstance(answer, bytes) else b"",
                response.content_type,
            )
            self.violations.add(openapi(DISCORD).check(exchange))
            async with self._recorder.changed:
                path = request.path.removeprefix(API)
                self._recorder.calls.append(Call(request.method, path, body))
                self._recorder.changed.notify_all()
            return response

        return recorded

    async def _me(self, request: web.Request, body: Any) -> web.Response:
        # The token's own user: with the fields only its owner sees.
        return _json(
            {**self._bot_user(), "mfa_enabled": False, "locale": "en-US", "verified": True}
        )

    async def _application(self, request: web.Request, body: Any) -> web.Response:
        return _json(
            {
                "id": str(APP_ID),
                "name": "relbot",
                "icon": None,
                "description": "",
                "type": None,
                "rpc_origins": [],
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": self._bot_user(),
                "verify_key": "0" * 64,
                "team": None,
                "flags": 0,
                "flags_new": "0",
                "redirect_uris": [],
                "interactions_endpoint_url": None,
                "role_connections_verification_url": None,
                "approximate_guild_count": 1,
                "approximate_user_install_count": 0,
                "approximate_user_authorization_count": 0,
                "explicit_content_filter": 0,
                "eligible_oauth2_scopes": [],
            }
        )

    async def _gateway_bot(self, request: web.Request, body: Any) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return _json({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    async def _sync(self, request: web.Request, body: Any) -> web.Response:
        if int(request.match_info["guild"]) != self.guild:  # a server the bot is not in
            return _json({"message": "Missing Access", "code": 50001}, status=403)
        self.commands = [
            {
                **command,
                # Discord fills in where the command may be installed when it is not given.
                "integration_types": command.get("integration_types") or [0],
                "id": str(next(self._ids)),
                "application_id": str(APP_ID),
                "guild_id": str(self.guild),
                "version": "1",
            }
            for command in body
        ]
        return _json(self.commands)

    async def _callback(self, request: web.Request, body: Any) -> web.Response:
        token = request.match_info["token"]
        if token in self._acknowledged:
            refusal = "Interaction has already been acknowledged."
            return _json({"message": refusal, "code": 40060}, status=400)
        if body["type"] == 9 and (problem := _modal_problem(body.get("data"))) is not None:
            return _json({"message": f"Invalid Form Body: {problem}", "code": 50035}, status=400)
        self._acknowledged[token] = body
        flags = (body.get("data") or {}).get("flags", 0)
        interaction: dict[str, Any] = {
            "id": request.match_info["id"],
            "type": 2,
            "response_message_loading": body["type"] == 5,
            "response_message_ephemeral": bool(flags & EPHEMERAL),
        }
        if body["type"] != 4:  # only a message made now comes back as the resource
            return _json({"interaction": interaction})
        message = self._message(body["data"], self.channel, flags=flags)
        self._originals[token] = message
        interaction["response_message_id"] = message["id"]
        return _json({"interaction": interaction, "resource": {"type": 4, "message": message}})

    async def _followup(self, request: web.Request, body: Any) -> web.Response:
        token = request.match_info["token"]
        if token not in self._acknowledged:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        message = self._message(body, self.channel, flags=body.get("flags", 0))
        message["webhook_id"] = str(APP_ID)
        self._followups.setdefault(token, []).append(message)
        return _json(message)

    async def _edit_original(self, request: web.Request, body: Any) -> web.Response:
        token = request.match_info["token"]
        if token not in self._acknowledged:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        original = self._originals.setdefault(token, self._message({}, self.channel))
        original.update({k: v for k, v in body.items() if k != "allowed_mentions"})
        return _json(original)

    async def _get_guild(self, request: web.Request, body: Any) -> web.Response:
        if int(request.match_info["guild"]) != self.guild or str(BOT_ID) not in self.members:
            return _json(_MISSING_ACCESS_BODY, status=403)
        return _json(self._rest_guild())

    async def _get_member(self, request: web.Request, body: Any) -> web.Response:
        if int(request.match_info["guild"]) != self.guild or str(BOT_ID) not in self.members:
            return _json(_MISSING_ACCESS_BODY, status=403)
        user = request.match_info["user"]
        if user not in self.members:
            return _json({"message": "Unknown Member", "code": 10007}, status=404)
        return _json(self._member(user))

    def _member(self, user: str) -> dict[str, Any]:
        shown = self._bot_user() if user == str(BOT_ID) else _user(user, f"user{user[-4:]}")
        return {
            "user": shown,
            "roles": self.members[user],
            "joined_at": TIMESTAMP,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "avatar": None,
            "banner": None,
            "communication_disabled_until": None,
            "nick": None,
            "pending": False,
            "premium_since": None,
        }

    def _channel_refusal(self, channel: int, needed: int) -> web.Response | None:
        """Discord's answer when the bot may not do ``needed`` in ``channel`` (None: it may)."""
        if channel != self.channel:
            return _json({"message": "Unknown Channel", "code": 10003}, status=404)
        granted = self.permissions(str(BOT_ID))
        if not granted & VIEW_CHANNEL:
            return _json(_MISSING_ACCESS_BODY, status=403)
        if granted & needed != needed:
            return _json({"message": "Missing Permissions", "code": 50013}, status=403)
        return None

    async def _get_channel(self, request: web.Request, body: Any) -> web.Response:
        refusal = self._channel_refusal(int(request.match_info["channel"]), VIEW_CHANNEL)
        return _json(self._channel_payload()) if refusal is None else refusal

    async def _post_message(self, request: web.Request, body: Any) -> web.Response:
        """A new message; a ``nonce`` is echoed in the answer (and only there: a message
        read later has none). With ``enforce_nonce``, a nonce the same author sent within
        :data:`NONCE_WINDOW` answers the message it made, and nothing is posted."""
        channel = int(request.match_info["channel"])
        refusal = self._channel_refusal(channel, VIEW_CHANNEL | SEND_MESSAGES)
        if refusal is not None:
            return refusal
        nonce = body.get("nonce")
        if nonce is not None and len(str(nonce)) > 25:
            problem = "nonce: Must be 25 or fewer in length."
            return _json({"message": f"Invalid Form Body: {problem}", "code": 50035}, status=400)
        key = (str(BOT_ID), str(nonce))
        if nonce is not None and body.get("enforce_nonce"):
            made = self._nonces.get(key)
            if made is not None and self.clock() - made[1] < NONCE_WINDOW:
                existing = self.channel_messages.get(made[0])
                if existing is not None:
                    return _json({**existing, "nonce": nonce})
        message = self._message(body, channel)
        self.channel_messages[int(message["id"])] = message
        if nonce is not None and body.get("enforce_nonce"):
            self._nonces[key] = (int(message["id"]), self.clock())
        return _json({**message, "nonce": nonce} if nonce is not None else message)

    async def _get_messages(self, request: web.Request, body: Any) -> web.Response:
        """The channel's last ``limit`` messages (1 to 100, default 50), newest first; none
        without Read Message History, as Discord answers."""
        channel = int(request.match_info["channel"])
        refusal = self._channel_refusal(channel, VIEW_CHANNEL)
        if refusal is not None:
            return refusal
        limit = int(request.query.get("limit", "50"))
        if not 1 <= limit <= 100:
            problem = "limit: int value should be less than or equal to 100."
            return _json({"message": f"Invalid Form Body: {problem}", "code": 50035}, status=400)
        if not self.permissions(str(BOT_ID)) & READ_MESSAGE_HISTORY:
            return _json([])
        newest = sorted(self.channel_messages, reverse=True)[:limit]
        return _json([self.channel_messages[i] for i in newest])

    def pass_nonce_window(self) -> None:
        """Let the few minutes pass after which Discord no longer enforces a nonce."""
        self._nonces = {k: (m, at - NONCE_WINDOW) for k, (m, at) in self._nonces.items()}

    async def _edit_message(self, request: web.Request, body: Any) -> web.Response:
        refusal = self._channel_refusal(int(request.match_info["channel"]), VIEW_CHANNEL)
        if refusal is not None:
            return refusal
        found = self.channel_messages.get(int(request.match_info["message"]))
        if found is None or int(request.match_info["channel"]) != self.channel:
            return _json({"message": "Unknown Message", "code": 10008}, status=404)
        cleared: dict[str, Any] = {"content": "", "embeds": [], "components": []}
        for key, empty in cleared.items():
            if key in body:
                found[key] = empty if body[key] is None else body[key]
        found["edited_timestamp"] = TIMESTAMP
        return _json(found)

    # -- gateway -------------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        socket = _Socket(ws)
        self._sockets.append(socket)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        try:
            async for frame in ws:
                if frame.type is not WSMsgType.TEXT:
                    continue
                data = json.loads(frame.data)
                match data["op"]:
                    case 1:
                        await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
                    case 2:
                        await self._identify(socket, data["d"])
                    case 6:  # RESUME: not kept; the client identifies anew
                        await ws.send_json({"op": 9, "d": False, "s": None, "t": None})
        finally:
            self._sockets.remove(socket)
        return ws

    async def _identify(self, socket: _Socket, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            await socket.ws.close(code=4004, message=b"Authentication failed.")
            return
        self.identifies.append(data)
        socket.identified, socket.intents = True, data.get("intents")
        await self._dispatch(
            socket,
            "READY",
            {
                "v": 10,
                "user": self._bot_user(),
                "guilds": [{"id": str(self.guild), "unavailable": True}],
                "session_id": f"session-{next(self._ids)}",
                "resume_gateway_url": self.gateway_url,
                "application": {"id": str(APP_ID), "flags": 0},
                "shard": [0, 1],
            },
        )
        if socket.intents is not None and socket.intents & 1:  # GUILDS
            await self._dispatch(socket, "GUILD_CREATE", self._guild_payload())

    async def _dispatch(self, socket: _Socket, event: str, data: dict[str, Any]) -> None:
        socket.sequence += 1
        await socket.ws.send_json({"op": 0, "t": event, "s": socket.sequence, "d": data})

    async def _interact(
        self, kind: int, user: str, data: dict[str, Any], message: dict[str, Any] | None = None
    ) -> Sent:
        live = [s for s in self._sockets if s.identified and not s.ws.closed]
        assert live, "no bot is connected to the mock gateway"
        sent = Sent(next(self._ids), f"token-{next(self._ids)}", {})
        sent.payload = {
            "id": str(sent.id),
            "application_id": str(APP_ID),
            "type": kind,
            "token": sent.token,
            "version": 1,
            "guild_id": str(self.guild),
            "channel_id": str(self.channel),
            "channel": self._channel_payload(),
            "member": {
                "user": _user(user, f"user{user[-4:]}"),
                "roles": [],
                "joined_at": TIMESTAMP,
                "deaf": False,
                "mute": False,
                "flags": 0,
                "permissions": "2248473465835073",
            },
            "app_permissions": "2248473465835073",
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(self.guild)},
            "context": 0,
            "attachment_size_limit": 10485760,
            "data": data,
        }
        if message is not None:
            sent.payload["message"] = message
        await self._dispatch(live[-1], "INTERACTION_CREATE", sent.payload)
        return sent

    # -- payloads ------------------------------------------------------------------------------

    def _bot_user(self) -> dict[str, Any]:
        return {**_user(str(BOT_ID), "relbot"), "bot": True}

    def _rest_guild(self) -> dict[str, Any]:
        """The server as ``GET /guilds/{id}`` answers: no members, channels or presences
        (those come with the gateway's GUILD_CREATE only)."""
        gateway = self._guild_payload()
        kept: tuple[str, ...] = ("id", "name", "icon", "owner_id", "roles", "emojis", "stickers")
        kept += ("features",)
        kept += ("verification_level", "default_message_notifications", "explicit_content_filter")
        kept += ("mfa_level", "nsfw_level", "premium_tier", "preferred_locale")
        kept += ("system_channel_flags",)
        unset: tuple[str, ...] = ("description", "home_header", "splash", "discovery_splash")
        unset += ("banner",)
        unset += ("application_id", "afk_channel_id", "system_channel_id", "widget_channel_id")
        unset += ("max_presences", "vanity_url_code", "rules_channel_id")
        unset += ("safety_alerts_channel_id", "public_updates_channel_id", "incidents_data")
        return {
            **{key: gateway[key] for key in kept},
            **dict.fromkeys(unset),
            "region": "deprecated",
            "afk_timeout": 300,
            "widget_enabled": False,
            "max_members": 250000,
            "max_stage_video_channel_users": 50,
            "max_video_channel_users": 25,
            "premium_subscription_count": 0,
            "premium_progress_bar_enabled": False,
            "nsfw": False,
        }

    def _channel_payload(self) -> dict[str, Any]:
        return {
            "id": str(self.channel),
            "type": 0,
            "guild_id": str(self.guild),
            "name": "release",
            "position": 0,
            "permission_overwrites": self.overwrites,
            "nsfw": False,
            "parent_id": None,
            "topic": None,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "flags": 0,
        }

    def _guild_payload(self) -> dict[str, Any]:
        return {
            "id": str(self.guild),
            "name": "Python release team",
            "icon": None,
            "owner_id": "1",
            "roles": [
                {
                    "id": role,
                    "name": "@everyone" if role == str(self.guild) else f"role-{role}",
                    "permissions": str(bits),
                    "position": 0,
                    "managed": False,
                    "mentionable": False,
                    "hoist": False,
                    "color": 0,
                    "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
                    "icon": None,
                    "unicode_emoji": None,
                    "flags": 0,
                }
                for role, bits in self.roles.items()
            ],
            "emojis": [],
            "stickers": [],
            "features": [],
            "member_count": 2,
            "large": False,
            "unavailable": False,
            "joined_at": TIMESTAMP,
            "members": [self._member(str(BOT_ID))] if str(BOT_ID) in self.members else [],
            "channels": [self._channel_payload()],
            "threads": [],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "system_channel_flags": 0,
        }

    def _message(self, body: dict[str, Any], channel: int, *, flags: int = 0) -> dict[str, Any]:
        return {
            "id": str(next(self._ids)),
            "channel_id": str(channel),
            "author": self._bot_user(),
            "content": body.get("content") or "",
            "timestamp": TIMESTAMP,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": body.get("embeds") or [],
            "components": _numbered(body.get("components") or []),
            "pinned": False,
            "type": 0,
            "flags": flags,
            "application_id": str(APP_ID),
        }


def _user(user_id: str, name: str) -> dict[str, Any]:
    return {
        "id": user_id,
        "username": name,
        "discriminator": "0",
        "global_name": None,
        "avatar": None,
        "public_flags": 0,
        "flags": 0,
        "primary_guild": None,
    }


def _numbered(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Components as Discord answers them: each numbered (``id``) in order, when not given."""
    counter = itertools.count(1)

    def number(component: dict[str, Any]) -> dict[str, Any]:
        numbered = {**component, "id": component.get("id") or next(counter)}
        if "components" in component:
            numbered["components"] = [number(c) for c in component["components"]]
        return numbered

    return [number(c) for c in components]


def _modal_problem(modal: Any) -> str | None:
    """What Discord refuses a modal for, in the limits relbot can hit."""
    if not isinstance(modal, dict) or not modal.get("custom_id"):
        return "a modal needs a custom_id"
    if not 1 <= len(modal.get("title") or "") <= 45:
        return "a modal's title is 1 to 45 characters"
    components = modal.get("components") or []
    if not 1 <= len(components) <= 5:
        return "a modal has 1 to 5 components"
    for component in components:
        if component.get("type") == 18:  # a label around one input
            if not 1 <= len(component.get("label") or "") <= 45:
                return "a label's text is 1 to 45 characters"
            if len(component.get("description") or "") > 100:
                return "a label's description is at most 100 characters"
            component = component.get("component") or {}
        if component.get("type") == 4 and not component.get("custom_id"):
            return "a text input needs a custom_id"
    return None


def _json(data: Any, status: int = 200) -> web.Response:
    # Exactly "application/json": discord.py compares the header verbatim, so aiohttp's
    # json_response (which appends "; charset=utf-8") would make it see text.
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


_MISSING_ACCESS_BODY = {"message": "Missing Access", "code": 50001}
