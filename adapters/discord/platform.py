"""The Discord platform wired to discord.py: its configuration, the client and its command
tree, the login and the gateway connection, started and stopped; and each interaction
acknowledged at once, asked of the gate as ``(Discord user ID, command line)``, and answered
privately to whoever typed or clicked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.buttons import CancelButton, ConfirmButton, LoginButton, PublishButton
from adapters.discord.channel import DiscordChat
from adapters.discord.check import ServerCheck
from adapters.discord.client import RelbotClient
from adapters.discord.commands import SYNC_STAMP, CommandSync, RelbotTree, slash_commands
from adapters.discord.embeds import REPLY_ROOM, plan_content, reply_content, reply_contents
from adapters.discord.errors import DiscordError, DiscordUnreachable
from bot.backoff import Backoff, OneLineRetries
from bot.config import Config
from bot.config.sections import DiscordConfig
from bot.errors import ConfigError, RelbotError, StorageError
from bot.ports.messages import Reply, Tone
from bot.service.gate import Gate

log = logging.getLogger(__name__)

MAX_CHOICES = 25
DISCORD_API = str(DiscordConfig.model_fields["api_url"].default).rstrip("/")  # unset api_url
READY_TIMEOUT = 30.0  # seconds start() waits for the gateway's READY


class DiscordPlatform:
    """Slash commands in the configured server and posts in its release channel.

    ``start`` logs in, syncs the commands to the server, connects to the gateway in a
    background task and returns once READY. With ``discord.api_url`` set (tests), discord.py
    is pointed at that API and at the gateway it names (``GET /gateway/bot``).
    """

    name = "discord"

    def __init__(
        self,
        token: str,
        settings: DiscordConfig,
        roles: Sequence[str],
        *,
        guild_ready_timeout: float = 2.0,
        people: Mapping[str, str] | None = None,
        sync_stamp: Path | None = None,
    ) -> None:
        self._token = token
        self._settings = settings
        self._roles = tuple(roles)
        self._guild = discord.Object(settings.guild)
        self._api = settings.api_url.rstrip("/")
        self._gate: Gate | None = None
        self._task: asyncio.Task[None] | None = None
        self._previous: tuple[str, yarl.URL] | None = None
        # Only the (unprivileged) guilds intent: slash commands and buttons need no intent,
        # and guild events tell discord.py which channels the bot can see.
        self._client = RelbotClient(
            self,
            intents=discord.Intents(guilds=True),
            allowed_mentions=discord.AllowedMentions.none(),  # a hold reason must not ping
            guild_ready_timeout=guild_ready_timeout,
        )
        self._tree = RelbotTree(self._client)
        # Synced only when the commands changed (with no sync_stamp: at every start).
        self._sync = CommandSync(self._tree, self._guild, sync_stamp)
        # discord.py logs each reconnect of the gateway with a traceback: one line instead.
        gateway_log = logging.getLogger("discord.client")
        if not any(isinstance(f, OneLineRetries) for f in gateway_log.filters):
            gateway_log.addFilter(OneLineRetries("Attempting a reconnect"))
        for command in slash_commands(self.run, self.tag_choices, self._roles):
            self._tree.add_command(command, guild=self._guild)
        self._people = dict(people or {})  # person → Discord user ID
        self._chat = DiscordChat(self._client, settings.channel, people)

    @classmethod
    def from_config(cls, config: Config) -> DiscordPlatform:
        """The platform of ``[discord]``; raises ConfigError naming ``discord.token_env`` when
        the token's environment variable is not set."""
        settings = config.model.discord
        if settings is None:
            raise ConfigError(f"{config.origin}: discord: the config has no [discord] table.")
        token = config.secret("discord.token_env", settings.token_env)
        ids = {name: p.discord for name, p in config.people.items() if p.discord}
        stamp = config.state_path.parent / SYNC_STAMP
        return cls(token, settings, config.profile.roles, people=ids, sync_stamp=stamp)

    @property
    def chat(self) -> DiscordChat:
        return self._chat

    @property
    def command_names(self) -> list[str]:
        """The slash commands relbot registers in the server, without ``/``."""
        return [c.name for c in self._tree.get_commands(guild=self._guild)]

    async def start(self, gate: Gate) -> None:
        """Connect and return once Discord says READY; raises DiscordError (naming the key to
        fix) when the token is refused or Discord cannot be reached."""
        self._gate = gate
        backoff = Backoff(f"discord: reaching {self._api}")
        while True:
            try:
                await self._connect()
                return
            except DiscordUnreachable as err:
                # Closing the session closes its connector too: the next login makes both anew.
                await self._client.http.close()
                self._client.http.connector = discord.utils.MISSING
                await asyncio.sleep(backoff.failed(log, err.__cause__ or err))
            except DiscordError:
                await self.stop()
                raise

    async def _connect(self) -> None:
        try:
            await self._login()  # then setup(): the commands are synced
        except discord.LoginFailure as err:
            raise DiscordError(
                f"discord.token_env: Discord refused the token in {self._settings.token_env}; "
                "copy the bot token again from the Developer Portal (Bot, Reset Token)."
            ) from err
        except discord.GatewayNotFound as err:
            raise DiscordError(f"discord.api_url: {self._api} names no gateway.") from err
        except discord.HTTPException as err:
            if err.status >= 500:
                raise DiscordUnreachable(f"discord.api_url: {self._api}: {err}") from err
            raise DiscordError(f"discord.api_url: cannot log in at {self._api}: {err}") from err
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            raise DiscordUnreachable(f"discord.api_url: cannot reach {self._api}: {err}") from err
        gateway = DiscordWebSocket.DEFAULT_GATEWAY
        self._task = asyncio.create_task(self._client.connect(), name="discord-gateway")
        ready = asyncio.create_task(self._client.wait_until_ready())
        done, _ = await asyncio.wait(
            {self._task, ready}, timeout=READY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
        )
        if ready not in done:
            ready.cancel()
            ended = self._task.done() and not self._task.cancelled()
            cause = self._task.exception() if ended else None
            raise DiscordError(
                f"Discord's gateway at {gateway} did not say READY"
                + (f": {cause}" if cause else f" within {READY_TIMEOUT:.0f} seconds")
                + "."
            )
        if self._client.get_guild(self._settings.guild) is None:
            log.warning(
                "discord.guild: the bot is not in server %s; invite it (see docs/discord.md).",
                self._settings.guild,
            )

    async def stop(self) -> None:
        """Disconnect and wait for the gateway task to end."""
        await self._client.close()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=10)
            except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as err:
                log.warning("Discord's gateway connection ended with %s", err)
        if self._previous is not None:
            Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = self._previous
            self._previous = None

    def check(self) -> list[str]:
        """What would fail on release day, each with the fix: the token refused, the bot not
        in the server, the channel unknown or elsewhere, a permission the bot lacks there,
        a person's ID that is no member of the server. Blocking (run in a thread)."""
        return ServerCheck(self._token, self._settings, self._api, self._people).problems()

    # -- wiring (called by the client) ---------------------------------------------------------

    async def setup(self, client: RelbotClient) -> None:
        """After login: the Publish button of any earlier plan works again, and the commands
        are (re)registered in the configured server only."""
        client.add_dynamic_items(PublishButton, ConfirmButton, CancelButton, LoginButton)
        await self._sync.sync(client.application_id)

    async def _login(self) -> None:
        """Log in. With ``discord.api_url`` set to another API than Discord's (a test's fake
        Discord), discord.py is pointed there first, and at the gateway that API names after.
        discord.py reads both addresses from class attributes, so this redirection is
        process-wide: it happens only then, only here, and :meth:`stop` undoes it."""
        if self._api == DISCORD_API:
            await self._client.login(self._token)
            return
        if self._previous is None:
            self._previous = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
        Route.BASE = self._api
        await self._client.login(self._token)
        _, gateway, _ = await self._client.http.get_bot_gateway()
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway)

    # -- commands ------------------------------------------------------------------------------

    async def run(self, interaction: discord.Interaction[Any], line: str) -> None:
        """Acknowledge at once (the gate may list staging and hash files), then answer
        privately: whatever changed shows in the release channel anyway."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        reply = await self._ask(interaction, line)
        view = discord.utils.MISSING
        if (prompt := reply.confirm) is not None:
            view = discord.ui.View(timeout=None)
            button = LoginButton if prompt.login_url else PublishButton
            view.add_item(button(prompt.tag, prompt.code))
            if prompt.login_url is not None:  # one message: its login link never clipped away
                content = plan_content(reply.text, prompt.login_url)
                await interaction.followup.send(content, ephemeral=True, view=view)
                return
        *first, last = reply_contents(reply.text)
        for content in first:
            await interaction.followup.send(content, ephemeral=True)
        await interaction.followup.send(last, ephemeral=True, view=view)

    async def confirm(
        self,
        interaction: discord.Interaction[Any],
        tag: str,
        code: str,
        *,
        login: str | None = None,
    ) -> None:
        """A click on "Yes, publish", or the login dialog submitted: the confirm line, typed
        by whoever clicked (with the login page's code, when the plan signs files)."""
        await interaction.response.defer()  # acknowledged, the plan unchanged
        line = f"/publish {tag} confirm {code}" + (f" {login}" if login else "")
        reply = await self._ask(interaction, line)
        if reply.tone is Tone.SUCCESS:
            await interaction.edit_original_response(view=None)  # published: no second click
        await interaction.followup.send(reply_content(reply.text), ephemeral=True)

    async def _ask(self, interaction: discord.Interaction[Any], line: str) -> Reply:
        if self._gate is None:
            return Reply("relbot is still starting; try again in a moment.", Tone.REFUSAL)
        try:
            user = str(interaction.user.id)
            return await self._gate.handle(self.name, user, line, room=REPLY_ROOM)
        except RelbotError as err:  # e.g. storage failing mid-command: say so, not "failed"
            return Reply(str(err), Tone.REFUSAL)

    async def tag_choices(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        """Open releases (staged, or recorded and unpublished) for the tag option; only a
        suggestion: the gate validates whatever is sent."""
        gate = self._gate
        if gate is None:
            return []
        try:
            tags = sorted(await gate.open_tags(), reverse=True)
        except StorageError:
            tags = gate.recorded_open_tags()
        wanted = current.strip().lower()
        return [
            app_commands.Choice(name=str(tag), value=str(tag))
            for tag in tags
            if str(tag).startswith(wanted)
        ][:MAX_CHOICES]
