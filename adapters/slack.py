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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.backoff import Backoff, OneLineRetries
from bot.config import Config
from bot.domain.plan import PublishPlan
from bot.domain.readiness import Readiness, RoleReadiness
from bot.errors import ConfigError, RelbotError
from bot.gate import Gate
from bot.messages import ChannelKind, ChannelMessage, ConfirmPrompt, Reply, Tone
from bot.render import count, role_line, size_text, when

log = logging.getLogger(__name__)

PLATFORM = "slack"
EVENTS_PATH = "/slack/events"
DEFAULT_API_URL = "https://slack.com/api/"
PUBLISH_ACTION = "relbot_publish"
LOGIN_VIEW = "relbot_login"  # the modal asking for the Sigstore login page's code
LOGIN_INPUT = "login"  # its input's block_id and action_id

# Slash command → the verb the gate understands. Slack reserves /help for itself.
COMMANDS: dict[str, str] = {
    "/ready": "/ready",
    "/unready": "/unready",
    "/status": "/status",
    "/hold": "/hold",
    "/unhold": "/unhold",
    "/publish": "/publish",
    "/respin": "/respin",
    "/waive": "/waive",
    "/unwaive": "/unwaive",
    "/abort": "/abort",
    "/relbot-help": "/help",
}
# Answers to questions stay with whoever asked; changes are shown to the channel.
_QUESTIONS = frozenset({"/status", "/help"})

# Block Kit limits (https://api.slack.com/reference/block-kit): a message may hold 50 blocks,
# a section 3000 characters, a header 150, a button value 2000, a confirm dialog's text 300.
MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_BUTTON_VALUE = 2000
MAX_DIALOG_TEXT = 300
MAX_MODAL_TITLE = 24  # a modal's title, submit and close labels
MAX_METADATA = 3000  # a modal's private_metadata
MAX_TEXT = 3000  # the notification fallback sent with blocks; Slack truncates past 40 000
MAX_LISTED = 12  # files named per list before "…and N more"

ROLE_ICONS = {
    "ready": "✅",
    "complete": "⏳",
    "incomplete": "❌",
    "withdrawn": "↩️",
    "waived": "💤",
    "public": "📦",
}

Block = dict[str, Any]


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


class SlackChat:
    """The release channel on Slack: ``chat.postMessage`` returns the ``ts`` that
    ``chat.update`` later edits (the readiness summary is edited in place)."""

    def __init__(
        self, client: AsyncWebClient, channel: str, people: Mapping[str, str] | None = None
    ) -> None:
        self._client = client
        self._channel = channel
        self._people = dict(people or {})  # person → Slack user ID, for mentions

    async def post(self, message: ChannelMessage) -> str:
        """Post ``message``; returns its ``ts``. Raises ``SlackApiError`` when Slack refuses."""
        response = await self._client.chat_postMessage(
            channel=self._channel, **channel_payload(message, self._people)
        )
        return str(response["ts"])

    async def update(self, ref: str, message: ChannelMessage) -> None:
        """Replace the message posted as ``ref``. Raises ``SlackApiError`` when Slack refuses."""
        await self._client.chat_update(
            channel=self._channel, ts=ref, **channel_payload(message, self._people)
        )


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
        self._chat = SlackChat(self._client, channel, people)
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
        for command in COMMANDS:
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
        )

    @property
    def chat(self) -> SlackChat:
        return self._chat

    async def start(self, gate: Gate) -> None:
        """Connect (Socket Mode) or listen (HTTP mode); returns once commands can arrive."""
        self._gate = gate
        if self.mode == "socket":
            self._socket = AsyncSocketModeHandler(self.app, self._app_token)
            # The SDK would retry forever with a traceback every 10 s: get the socket's URL
            # here, with backoff and one line per attempt, then let the SDK connect to it.
            self._socket.client.wss_uri = await self._socket_url()
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

    async def _socket_url(self) -> str:
        """A Socket Mode URL (``apps.connections.open``), retried while Slack cannot be
        reached. Raises ConfigError when Slack refuses the app token."""
        backoff = Backoff(f"slack: reaching {self._api_url}")
        while True:
            try:
                response = await self._client.apps_connections_open(app_token=self._app_token or "")
                return str(response["url"])
            except SlackApiError as err:
                raise ConfigError(
                    f"slack.app_token_env: Slack refused the app token ({_error_code(err)}); "
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
        """Problems reaching Slack: the bot token (and app token) refused, each with the fix."""
        problems: list[str] = []
        client = WebClient(token=self._bot_token, base_url=self._api_url)
        try:
            client.auth_test()
        except SlackApiError as err:
            problems.append(
                f"slack.bot_token_env: Slack refused the bot token ({_error_code(err)}); "
                "copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page."
            )
        except (SlackClientError, OSError) as err:  # urllib's URLError is an OSError
            problems.append(f"slack.api_url: cannot reach {self._api_url} ({type(err).__name__}).")
        if self.mode == "socket" and not problems:
            try:
                client.apps_connections_open(app_token=self._app_token or "")
            except SlackApiError as err:
                problems.append(
                    f"slack.app_token_env: Slack refused the app token ({_error_code(err)}); "
                    "create an app-level token with connections:write under Basic Information "
                    "and enable Socket Mode."
                )
            except (SlackClientError, OSError) as err:
                problems.append(
                    f"slack.api_url: cannot reach {self._api_url} ({type(err).__name__})."
                )
        return problems

    # -- requests ----------------------------------------------------------------------------

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
        verb = COMMANDS[command["command"]]
        text = unescape(str(command.get("text") or "")).strip()
        line = f"{verb} {text}" if text else verb
        reply = await self._ask(str(command["user_id"]), line)
        if verb == "/help":  # Slack keeps /help for itself: name the command that works here
            reply = Reply(reply.text.replace("/help", "/relbot-help"), reply.tone)
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
                    f"Slack did not open the login dialog ({_error_code(err)}); type {typed} "
                    "with the plan's code and the login page's code instead.",
                    Tone.REFUSAL,
                )
                await self._respond(respond, reply_payload(reply))
            return
        progress = f"Publishing {prompt.tag}: confirmed by <@{clicker}>; checking staging…"
        await self._respond(
            respond, {"text": progress, "blocks": [_section(f"⏳ {progress}")]}, replace=True
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
        await webhook.send(
            text=progress, blocks=[_section(f"⏳ {progress}")], replace_original=True
        )
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


# -- rendering ---------------------------------------------------------------------------------


def channel_payload(
    message: ChannelMessage, people: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``text`` (and ``blocks`` for the summary) of a channel message. The people it calls
    on are mentioned by Slack user ID (``people``: person → ID), so Slack notifies them; one
    without an ID is named."""
    if message.kind is ChannelKind.SUMMARY:
        return {
            "text": _clip(escape(message.text), MAX_TEXT),
            "blocks": summary_blocks(message.text, message.readiness),
        }
    return {"text": mentions(message.mentions, people or {}) + escape(message.text)}


def mentions(persons: Sequence[str], people: Mapping[str, str]) -> str:
    """``<@U01ABCDEF> `` per person: Slack's mention markup, which notifies them."""
    return "".join(f"<@{escape(people[p])}> " if p in people else f"{escape(p)} " for p in persons)


def summary_blocks(text: str, readiness: Readiness | None) -> list[Block]:
    """The readiness summary: a header, one section per role, then stray files, holds,
    signatures and other blockers. ``text`` is the plain summary; its first line is the
    headline (it says whether the release is publishable, publishing or published). A
    published release comes without readiness: the headline says it all."""
    lines = text.splitlines() or [""]
    blocks: list[Block] = [_header(lines[0])]
    if readiness is None:
        return blocks
    tag = str(readiness.tag)
    blocks += [_section(_role_text(role, tag)) for role in readiness.roles]
    if readiness.stray:
        files = [f"`{escape(f.path)}` ({f.status.value})" for f in readiness.stray]
        blocks.append(_section(_listing("🚫 *Unexpected in staging* (blocks publishing):", files)))
    if readiness.holds:
        holds = [
            f"{escape(h.person)} since {when(h.at)}" + (f": {escape(h.reason)}" if h.reason else "")
            for h in readiness.holds
        ]
        blocks.append(_section(_listing("🛑 *On hold*", holds)))
    if readiness.signatures:
        valid = len(readiness.signatures) - len(readiness.unsigned)
        rule = "required" if readiness.signatures_required else "not required"
        head = (
            f"🔏 *Signatures*: {valid} of {count(len(readiness.signatures), 'file')} signed "
            f"and valid ({rule})"
        )
        bad = [
            f"`{escape(s.path)}`: {escape(s.reason or s.status.value)}"
            for s in readiness.signature_problems
        ]
        blocks.append(_section(_listing(head, bad) if bad else head))
    return _fit(blocks)


def reply_payload(reply: Reply) -> dict[str, Any]:
    """``text`` and ``blocks`` of the answer to one command (the plan gets its button)."""
    if reply.plan is not None and reply.confirm is not None:
        return {
            "text": _clip(escape(reply.text), MAX_TEXT),
            "blocks": plan_blocks(reply.plan, reply.confirm, reply.text),
        }
    if reply.summaries and not reply.private:  # /status: the summary's Block Kit
        return {"text": _clip(escape(reply.text), MAX_TEXT), "blocks": status_blocks(reply)}
    icon = {Tone.REFUSAL: "❌ ", Tone.SUCCESS: "✅ "}.get(reply.tone, "")
    lines = reply.text.splitlines() or [""]
    if len(lines) == 1:
        blocks = [_section(icon + escape(lines[0]))]
    else:  # /status and /help: aligned columns, kept aligned in a code block
        blocks = [_section(f"```{chunk}```") for chunk in _chunks(escape(reply.text))]
    return {"text": _clip(escape(reply.text), MAX_TEXT), "blocks": _fit(blocks)}


def status_blocks(reply: Reply) -> list[Block]:
    """The answer to ``/status``: each release as its channel summary shows it, divided."""
    blocks: list[Block] = []
    for message in reply.summaries:
        if blocks:
            blocks.append({"type": "divider"})
        if message.kind is ChannelKind.SUMMARY:
            blocks += summary_blocks(message.text, message.readiness)
        else:  # nothing staged yet: a sentence, not a summary
            blocks.append(_section(escape(message.text)))
    return _fit(blocks)


def plan_blocks(plan: PublishPlan, prompt: ConfirmPrompt, text: str) -> list[Block]:
    """The publish plan for the RM: what goes where, and the Publish button with a confirm
    dialog naming the tag. ``text`` is the plain plan; its confirm line says until when."""
    tag = str(plan.tag)
    files, size = count(len(plan.files), "file"), size_text(plan.total_size)
    roles = []
    for role, role_files in plan.by_role().items():
        folders = sorted({f.target.rsplit("/", 1)[0] + "/" for f in role_files})
        where = ", ".join(f"`{escape(folder)}`" for folder in folders[:MAX_LISTED])
        more = f" …and {len(folders) - MAX_LISTED} more" if len(folders) > MAX_LISTED else ""
        roles.append(
            f"*{escape(role)}*: {count(len(role_files), 'file')}, "
            f"{size_text(sum(f.size for f in role_files))} → {where}{more}"
        )
    # The plain plan's last line says how long the code lasts; show it with the line as code.
    typed = next((line for line in text.splitlines() if prompt.line in line), prompt.shown)
    typed_line = escape(typed).replace(escape(prompt.shown), f"`{escape(prompt.shown)}`")
    fields = {"tag": prompt.tag, "code": prompt.code}
    if prompt.login_url is not None:
        fields["login"] = "1"  # the click opens the login dialog instead of a confirm dialog
    value = json.dumps(fields, separators=(",", ":"))
    assert len(value) <= MAX_BUTTON_VALUE, "a tag and a code are short"
    dialog = (
        f"All {files} of {tag} ({size}) become public now; then {tag} is registered and "
        "announced. Published files cannot be taken back."
    )
    button: Block = {
        "type": "button",
        "action_id": PUBLISH_ACTION,
        "text": _plain(f"Publish {tag}"),
        "style": "primary",
        "value": value,
    }
    if prompt.login_url is None:
        button["confirm"] = {
            "title": _plain(_clip(f"Publish {tag}?", 100)),
            "text": _plain(_clip(dialog, MAX_DIALOG_TEXT)),
            "confirm": _plain(_clip(f"Publish {tag}", 30)),
            "deny": _plain("Cancel"),
            "style": "primary",
        }
    signing: list[Block] = []
    if prompt.login_url is not None:
        lines = [line for line in text.splitlines() if line.startswith("Signing:")]
        signing.append(
            _section(
                "🔏 "
                + escape(lines[0] if lines else "Signing at the confirmation.")
                + f"\n<{prompt.login_url}|Log in to Sigstore>, then press Publish and enter "
                "the code the login page shows."
            )
        )
    return _fit(
        [
            _header(f"Publish plan for {tag}: {files}, {size}"),
            _section(_listing("Every file becomes public together:", roles)),
            *signing,
            {"type": "actions", "block_id": PUBLISH_ACTION, "elements": [button]},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": _clip(typed_line, 3000)}],
            },
        ]
    )


def login_modal(prompt: ConfirmPrompt, response_url: str) -> dict[str, Any]:
    """The confirm dialog of a plan that signs files: one field, the code the Sigstore login
    page showed. ``private_metadata`` carries the plan's tag and code and where to answer."""
    metadata = json.dumps(
        {"tag": prompt.tag, "code": prompt.code, "response_url": response_url},
        separators=(",", ":"),
    )
    assert len(metadata) <= MAX_METADATA, "a tag, a code and a response URL are short"
    return {
        "type": "modal",
        "callback_id": LOGIN_VIEW,
        "title": _plain(_clip(f"Publish {prompt.tag}?", MAX_MODAL_TITLE)),
        "submit": _plain("Publish"),
        "close": _plain("Cancel"),
        "private_metadata": metadata,
        "blocks": [
            _section(
                f"Every file of {escape(prompt.tag)} is signed with your login and becomes "
                "public at once; then it is registered and announced. Published files cannot "
                "be taken back."
            ),
            {
                "type": "input",
                "block_id": LOGIN_INPUT,
                "label": _plain("Code from the Sigstore login page"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": LOGIN_INPUT,
                    "min_length": 4,
                    "max_length": 512,
                },
            },
        ],
    }


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


def _role_text(role: RoleReadiness, tag: str) -> str:
    word, detail = role_line(role, tag)
    head = f"{ROLE_ICONS.get(word, '•')} *{escape(role.role)}*: {word}"
    if role.excused:  # waived: what it lacks blocks nothing
        return f"{head}, {escape(detail)}"
    if role.claim is not None and role.problems:
        head += f" (claimed by {escape(role.claim.person)} at {when(role.claim.at)})"
    if role.problems:
        required = sum(1 for f in role.files if f.required)
        problems = [f"`{escape(f.path)}` ({f.status.value})" for f in role.problems]
        return _listing(f"{head}, {len(role.problems)} of {required} files not ready:", problems)
    if role.claim is not None:
        size = size_text(sum(f.size or 0 for f in role.present))
        files = count(len(role.present), "file")
        who = f"claimed by {escape(role.claim.person)} at {when(role.claim.at)}"
        return f"{head}\n{who}: {files}, {size}"
    return f"{head}\n{escape(detail)}"


def _listing(head: str, items: Sequence[str]) -> str:
    """``head`` and a bulleted list, cut to fit one section with "…and N more"."""
    shown: list[str] = []
    used = len(head)
    for item in items:
        line = f"\n• {item}"
        if len(shown) == MAX_LISTED or used + len(line) > MAX_SECTION - 40:
            break
        shown.append(line)
        used += len(line)
    rest = len(items) - len(shown)
    return head + "".join(shown) + (f"\n…and {rest} more" if rest else "")


def _chunks(text: str, limit: int = MAX_SECTION - 6) -> Iterable[str]:
    """``text`` in pieces of whole lines that fit a section (minus the code fences)."""
    piece = ""
    for line in text.splitlines():
        line = _clip(line, limit)
        if piece and len(piece) + 1 + len(line) > limit:
            yield piece
            piece = ""
        piece = f"{piece}\n{line}" if piece else line
    yield piece


def _fit(blocks: list[Block]) -> list[Block]:
    """At most 50 blocks: the last one says how many were left out."""
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    rest = len(blocks) - (MAX_BLOCKS - 1)
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"…and {rest} more"}]}
    return [*blocks[: MAX_BLOCKS - 1], note]


def _header(text: str) -> Block:
    return {"type": "header", "text": _plain(_clip(text, MAX_HEADER))}


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, MAX_SECTION)}}


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape(text: str) -> str:
    """Slack's three control characters, so a file name or reason never becomes markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """What was typed: Slack sends ``&``, ``<`` and ``>`` of a command's text escaped."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


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


def _error_code(err: SlackApiError) -> str:
    return str(err.response.get("error", "error"))
