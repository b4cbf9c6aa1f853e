"""The Slack platform: slash commands into the gate, Block Kit out to the release channel.

Built on slack-bolt's ``AsyncApp``. Socket Mode by default (an ``xapp-`` token, no public
endpoint); HTTP mode serves ``/slack/events`` with aiohttp. Every request is acknowledged
before any gate work, and the answer follows through the command's ``response_url``.
This module translates and renders only: who may do what is decided by the gate.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.blocks import (
    LOGIN_INPUT,
    LOGIN_VIEW,
    PUBLISH_ACTION,
    login_modal,
    reply_payload,
    section,
    unescape,
)
from adapters.slack.channel import SlackChat, error_code
from adapters.slack.check import WorkspaceCheck
from adapters.slack.commands import Renamer, command_names
from bot.backoff import Backoff, OneLineRetries
from bot.config import Config
from bot.errors import ConfigError, RelbotError
from bot.gate import Gate
from bot.messages import ConfirmPrompt, Reply, Tone

log = logging.getLogger(__name__)

PLATFORM = "slack"
EVENTS_PATH = "/slack/events"
DEFAULT_API_URL = "https://slack.com/api/"

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


class SlackPlatform:
    """relbot on one Slack workspace: slash commands, the Publish button, the channel."""

    name = PLATFORM

    def __init__(
        self,
        *,
        bot_token: str,
        channel: str,
        mode: Literal["socket", "http"] = "socket",
        app_token: str | None = None,
        signing_secret: str | None = None,
        port: int = 3000,
        host: str = "127.0.0.1",
        api_url: str = DEFAULT_API_URL,
        remembered_deliveries: int = 2048,
        people: Mapping[str, str] | None = None,
        command_prefix: str = "",
    ) -> None:
        if mode == "socket" and not app_token:
            raise ConfigError("slack.app_token_env: Socket Mode needs an app-level token.")
        if mode == "http" and not signing_secret:
            raise ConfigError("slack.signing_secret_env: HTTP mode needs the signing secret.")
        self.mode = mode
        self.host = host
        self.port = port  # with port 0, the port actually bound once started
        self._bot_token = bot_token
        self._app_token = app_token
        self._api_url = api_url.rstrip("/") + "/"
        self._client = AsyncWebClient(token=bot_token, base_url=self._api_url)
        # slack-sdk retries only connection errors by default; ~1 message/s/channel is allowed.
        self._client.retry_handlers = [
            AsyncConnectionErrorRetryHandler(),
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
        ]
        self._channel = channel
        self._people = dict(people or {})  # person → Slack user ID
        self.commands = command_names(command_prefix)  # slash command → the gate's verb
        self._rename = Renamer(command_prefix)
        self._chat = SlackChat(self._client, channel, people, self._rename)
        self._seen = SeenDeliveries(remembered_deliveries)
        self._gate: Gate | None = None
        self._running: set[asyncio.Task[Any]] = set()
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        self.app = AsyncApp(
            name="relbot",
            client=self._client,
            # Socket Mode requests are not signed; bolt only verifies HTTP ones.
            signing_secret=signing_secret or "",
        )
        _quiet_retries(self.app.logger)
        self.app.middleware(self._once)
        for command in self.commands:
            self.app.command(command)(self._on_command)
        self.app.action(PUBLISH_ACTION)(self._on_publish_click)
        self.app.view(LOGIN_VIEW)(self._on_login_submit)

    @classmethod
    def from_config(cls, config: Config) -> SlackPlatform:
        """The platform of ``[slack]``; raises ConfigError naming the key of a missing secret."""
        settings = config.model.slack
        if settings is None:
            raise ConfigError(f"{config.origin}: slack: the config has no [slack] table.")
        bot_token = config.secret("slack.bot_token_env", settings.bot_token_env)
        app_token = signing_secret = None
        if settings.mode == "socket":
            app_token = config.secret("slack.app_token_env", settings.app_token_env)
        else:
            signing_secret = config.secret("slack.signing_secret_env", settings.signing_secret_env)
        return cls(
            bot_token=bot_token,
            channel=settings.channel,
            mode=settings.mode,
            app_token=app_token,
            signing_secret=signing_secret,
            port=settings.port,
            api_url=settings.api_url,
            people={name: p.slack for name, p in config.people.items() if p.slack},
            command_prefix=settings.command_prefix,
        )

    @property
    def chat(self) -> SlackChat:
        return self._chat

    async def start(self, gate: Gate) -> None:
        """Connect (Socket Mode) or listen (HTTP mode); returns once commands can arrive."""
        self._gate = gate
        if self.mode == "socket":
            # The SDK would retry a refused app token forever, with a traceback every 10 s:
            # ask apps.connections.open here first, with backoff and one line per attempt.
            # Then the SDK asks for its own URL through the same client (``api_url``).
            await self._reach_socket_mode()
            self._socket = AsyncSocketModeHandler(self.app, self._app_token)
            await self._socket.connect_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt
            return
        server = web.Application()
        server.router.add_post(EVENTS_PATH, self._serve)
        self._runner = web.AppRunner(server, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        bound = self._runner.addresses[0]
        self.port = int(bound[1])
        log.info("slack: listening on http://%s:%d%s", self.host, self.port, EVENTS_PATH)

    async def _reach_socket_mode(self) -> None:
        """Wait until ``apps.connections.open`` answers, retried while Slack cannot be
        reached. Raises ConfigError when Slack refuses the app token."""
        backoff = Backoff(f"slack: reaching {self._api_url}")
        while True:
            try:
                await self._client.apps_connections_open(app_token=self._app_token or "")
                return
            except SlackApiError as err:
                raise ConfigError(
                    f"slack.app_token_env: Slack refused the app token ({error_code(err)}); "
                    "create an app-level token with connections:write and enable Socket Mode."
                ) from err
            except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as err:
                await asyncio.sleep(backoff.failed(log, err))

    async def stop(self) -> None:
        """Stop taking requests, finish the commands under way, disconnect."""
        if self._socket is not None:
            await self._socket.disconnect_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt
        if self._runner is not None:
            await self._runner.cleanup()
        await self.drain()
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt
            self._socket = None
        self._runner = None

    async def drain(self) -> None:
        """Wait until every command and click received so far has been answered."""
        while self._running:
            await asyncio.wait(set(self._running))

    def check(self) -> list[str]:
        """What would fail on release day, each with the fix: the tokens refused, the
        channel unknown, archived or without the bot, a scope missing, a person's ID that is
        no user of the workspace. Blocking (``relbot check`` runs it in a thread)."""
        return WorkspaceCheck(
            bot_token=self._bot_token,
            api_url=self._api_url,
            channel=self._channel,
            mode=self.mode,
            app_token=self._app_token,
            people=self._people,
        ).problems()

    async def _serve(self, request: web.Request) -> web.Response:
        bolt_response = await self.app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(bolt_response)

    async def _once(
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

    async def _on_command(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond
    ) -> None:
        self._track()
        await ack()  # Slack wants an answer within 3 s; the gate may take longer
        verb = self.commands[command["command"]]
        text = unescape(str(command.get("text") or "")).strip()
        line = f"{verb} {text}" if text else verb
        reply = await self._ask(str(command["user_id"]), line)
        public = not reply.private and reply.confirm is None and verb not in _QUESTIONS
        await self._respond(respond, reply_payload(reply), public=public)

    async def _on_publish_click(
        self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond
    ) -> None:
        """The plan's Publish button: the same line as a typed confirmation, so the gate
        authorizes the click exactly like one."""
        self._track()
        await ack()
        clicker = str(body["user"]["id"])
        prompt = _prompt_from_button(action.get("value"))
        if prompt is None:
            reply = Reply(
                "That button carries no publish plan; type /publish TAG for a new one.",
                Tone.REFUSAL,
            )
            await self._respond(respond, reply_payload(reply))
            return
        if prompt.login_url is not None:  # the plan signs files: the dialog asks the login
            view = login_modal(prompt, str(body.get("response_url") or ""))
            try:
                await self._client.views_open(trigger_id=str(body["trigger_id"]), view=view)
            except SlackApiError as err:
                typed = f"/publish {prompt.tag} confirm <code> <login>"
                reply = Reply(
                    f"Slack did not open the login dialog ({error_code(err)}); type {typed} "
                    "with the plan's code and the login page's code instead.",
                    Tone.REFUSAL,
                )
                await self._respond(respond, reply_payload(reply))
            return
        progress = f"Publishing {prompt.tag}: confirmed by <@{clicker}>; checking staging…"
        await self._respond(
            respond, {"text": progress, "blocks": [section(f"⏳ {progress}")]}, replace=True
        )
        reply = await self._ask(clicker, prompt.line)
        await self._respond(respond, reply_payload(reply), replace=True)

    async def _on_login_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """The login dialog submitted: the confirm line typed with the login page's code, by
        whoever submitted; the answer goes where the plan's button answered."""
        self._track()
        await ack()  # closes the dialog; the gate may take long (signing, publishing)
        submitter = str(body["user"]["id"])
        metadata = _login_metadata(view.get("private_metadata"))
        login = _login_value(view)
        if metadata is None:
            log.warning("slack: a login dialog without its plan was submitted")
            return
        prompt, response_url = metadata
        webhook = AsyncWebhookClient(response_url)
        progress = f"Publishing {prompt.tag}: confirmed by <@{submitter}>; signing and checking…"
        await webhook.send(text=progress, blocks=[section(f"⏳ {progress}")], replace_original=True)
        reply = await self._ask(submitter, prompt.with_login(login) if login else prompt.line)
        payload = reply_payload(reply)
        response = await webhook.send(
            text=payload["text"], blocks=payload.get("blocks"), replace_original=True
        )
        if response.status_code != 200:
            log.warning("slack: response_url answered %d: %s", response.status_code, response.body)

    async def _ask(self, user: str, line: str) -> Reply:
        """The gate's answer; a failure inside relbot still gets the user an answer."""
        assert self._gate is not None, "start() sets the gate"
        try:
            return await self._gate.handle(PLATFORM, user, line)
        except RelbotError as err:
            log.warning("slack: %s failed: %s", line.split()[0], err)
            return Reply(str(err), Tone.REFUSAL)
        except Exception:  # the user must hear back; the traceback goes to the log
            log.exception("slack: %s failed", line.split()[0])
            return Reply("relbot failed to carry that out; its log has the details.", Tone.REFUSAL)

    async def _respond(
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

    def _track(self) -> None:
        """Count the listener under way (bolt runs it as a task of its own) for ``drain``."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
            task.add_done_callback(self._running.discard)


def _login_metadata(value: object) -> tuple[ConfirmPrompt, str] | None:
    """The plan (tag, code) and the response URL a login dialog carries, or None."""
    try:
        data = json.loads(str(value))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    tag, code, url = data.get("tag"), data.get("code"), data.get("response_url")
    if not all(isinstance(v, str) and v for v in (tag, code, url)):
        return None
    return ConfirmPrompt(str(tag), str(code)), str(url)


def _login_value(view: Mapping[str, Any]) -> str:
    """What was typed in the login dialog's field ("" when nothing)."""
    values = view.get("state", {}).get("values", {})
    typed = values.get(LOGIN_INPUT, {}).get(LOGIN_INPUT, {}).get("value")
    return typed.strip() if isinstance(typed, str) else ""


# -- small things ------------------------------------------------------------------------------


def _prompt_from_button(value: object) -> ConfirmPrompt | None:
    """The tag and code a Publish button carries, or None if it carries something else."""
    try:
        data = json.loads(str(value))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    tag, code = data.get("tag"), data.get("code")
    if not isinstance(tag, str) or not isinstance(code, str):
        return None
    # A plan that signs files: its prompt has a login (the link itself is in the plan).
    return ConfirmPrompt(tag, code, "" if data.get("login") else None)


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


def _quiet_retries(logger: logging.Logger) -> None:
    """The SDK logs each failed reconnect with a traceback: one line instead."""
    if not any(isinstance(f, OneLineRetries) for f in logger.filters):
        logger.addFilter(OneLineRetries("Failed to connect"))
