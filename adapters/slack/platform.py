"""The Slack platform wired to slack-bolt: its configuration, the ``AsyncApp`` with its
listeners, and the connection, started and stopped.

Socket Mode by default (an ``xapp-`` token, no public endpoint); HTTP mode serves
``/slack/events`` with aiohttp. Every request is acknowledged before any gate work, and the
answer follows through the command's ``response_url`` (:mod:`adapters.slack.listeners`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Literal

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.blocks import LOGIN_VIEW, PUBLISH_ACTION
from adapters.slack.channel import SlackChat, error_code
from adapters.slack.check import WorkspaceCheck
from adapters.slack.commands import Renamer, command_names
from adapters.slack.confirming import PublishConfirmation
from adapters.slack.listeners import PLATFORM, Listeners, SeenDeliveries
from bot.backoff import Backoff, OneLineRetries
from bot.config import Config
from bot.errors import ConfigError
from bot.service.gate import Gate

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
DEFAULT_API_URL = "https://slack.com/api/"


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
        self._listeners = Listeners(
            self.commands, self._rename, SeenDeliveries(remembered_deliveries)
        )
        self._confirming = PublishConfirmation(self._client, self._listeners)
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        self.app = AsyncApp(
            name="relbot",
            client=self._client,
            # Socket Mode requests are not signed; bolt only verifies HTTP ones.
            signing_secret=signing_secret or "",
        )
        _quiet_retries(self.app.logger)
        self.app.middleware(self._listeners.once)
        for command in self.commands:
            self.app.command(command)(self._listeners.on_command)
        self.app.action(PUBLISH_ACTION)(self._confirming.on_publish_click)
        self.app.view(LOGIN_VIEW)(self._confirming.on_login_submit)

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
        self._listeners.gate = gate
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
        await self._listeners.drain()

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


def _quiet_retries(logger: logging.Logger) -> None:
    """The SDK logs each failed reconnect with a traceback: one line instead."""
    if not any(isinstance(f, OneLineRetries) for f in logger.filters):
        logger.addFilter(OneLineRetries("Failed to connect"))
