"""The Discord platform (discord.py 2.x): the contract's commands as slash commands in one
server, replies to whoever typed them, and the release channel, where each release's summary
is an embed edited in place and notices and announcements are plain messages.

The adapter only translates: an interaction becomes ``(Discord user ID, command line)`` for
:meth:`bot.gate.Gate.handle`, and the gate's reply is rendered back. Who may do what is the
gate's business, so no command carries ``default_permissions``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.buttons import (
    CancelButton,
    ConfirmButton,
    LoginButton,
    PublishButton,
)
from adapters.discord.channel import (
    DiscordChat,
)
from adapters.discord.check import ServerCheck
from adapters.discord.client import RelbotClient
from adapters.discord.embeds import plan_content, reply_content, reply_contents
from adapters.discord.errors import DiscordError, DiscordUnreachable
from bot.backoff import Backoff, OneLineRetries
from bot.config import Config, DiscordConfig
from bot.errors import ConfigError, RelbotError, StorageError
from bot.gate import Gate
from bot.messages import Reply, Tone

log = logging.getLogger(__name__)

MAX_CHOICES = 25
DISCORD_API = str(DiscordConfig.model_fields["api_url"].default).rstrip("/")  # unset api_url
READY_TIMEOUT = 30.0  # seconds start() waits for the gateway's READY
SYNC_STAMP = "discord-commands.sha256"  # beside the state file: the tree last synced


class _Tree(app_commands.CommandTree[RelbotClient]):
    async def on_error(
        self, interaction: discord.Interaction[RelbotClient], error: app_commands.AppCommandError
    ) -> None:
        # The command's name only: its options may hold a confirmation code.
        name = interaction.command.qualified_name if interaction.command else "?"
        log.error("Discord command /%s failed", name, exc_info=error)
        text = "relbot hit an internal error answering this; the bot's log has the details."
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True)
        else:
            await interaction.response.send_message(text, ephemeral=True)


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
        # The digest of the command tree last synced (None: sync at every start).
        self._sync_stamp = sync_stamp
        # Only the (unprivileged) guilds intent: slash commands and buttons need no intent,
        # and guild events tell discord.py which channels the bot can see.
        self._client = RelbotClient(
            self,
            intents=discord.Intents(guilds=True),
            allowed_mentions=discord.AllowedMentions.none(),  # a hold reason must not ping
            guild_ready_timeout=guild_ready_timeout,
        )
        self._tree = _Tree(self._client)
        # discord.py logs each reconnect of the gateway with a traceback: one line instead.
        gateway_log = logging.getLogger("discord.client")
        if not any(isinstance(f, OneLineRetries) for f in gateway_log.filters):
            gateway_log.addFilter(OneLineRetries("Attempting a reconnect"))
        for command in self._commands():
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
        digest = self._tree_digest(client.application_id)
        if self._synced() == digest:
            log.info("discord: the commands are unchanged since the last sync; not synced")
            return
        try:
            await self._tree.sync(guild=self._guild)
        except discord.Forbidden as err:
            raise DiscordError(
                f"discord.guild: Discord does not let the bot register commands in server "
                f"{self._settings.guild}; invite it there with the bot and applications.commands "
                "scopes (docs/discord.md)."
            ) from err
        self._remember_sync(digest)

    def _tree_digest(self, application: int | None) -> str:
        """What a sync would send, and where: the same digest means nothing to sync (Discord
        limits how many commands a bot may create a day)."""
        commands = [c.to_dict(self._tree) for c in self._tree.get_commands(guild=self._guild)]
        payload = {"application": application, "guild": self._settings.guild, "tree": commands}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def _synced(self) -> str | None:
        if self._sync_stamp is None:
            return None
        try:
            return self._sync_stamp.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None  # never synced here, or unreadable: sync

    def _remember_sync(self, digest: str) -> None:
        if self._sync_stamp is None:
            return
        partial = self._sync_stamp.with_name(self._sync_stamp.name + ".tmp")
        try:
            partial.write_text(digest + "\n", encoding="ascii")
            os.replace(partial, self._sync_stamp)
        except OSError as err:  # the next start syncs again: harmless
            log.warning("discord: cannot remember the synced commands in %s: %s", partial, err)

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
            return await self._gate.handle(self.name, str(interaction.user.id), line)
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

    def _commands(self) -> list[app_commands.Command[Any, Any, None]]:
        run, tags = self.run, self.tag_choices
        roles = [app_commands.Choice(name=role, value=role) for role in self._roles]

        @app_commands.command(description="Say your role's files for a release are staged")
        @app_commands.describe(role="your role", tag="release tag, e.g. 3.14.1")
        @app_commands.choices(role=roles)
        @app_commands.autocomplete(tag=tags)
        async def ready(interaction: discord.Interaction[Any], role: str, tag: str) -> None:
            await run(interaction, f"/ready {role} {tag}")

        @app_commands.command(description="Withdraw a role's claim on a release")
        @app_commands.describe(role="the role", tag="release tag")
        @app_commands.choices(role=roles)
        @app_commands.autocomplete(tag=tags)
        async def unready(interaction: discord.Interaction[Any], role: str, tag: str) -> None:
            await run(interaction, f"/unready {role} {tag}")

        @app_commands.command(description="What is ready, missing or blocking")
        @app_commands.describe(tag="release tag (default: every open release)")
        @app_commands.autocomplete(tag=tags)
        async def status(interaction: discord.Interaction[Any], tag: str | None = None) -> None:
            await run(interaction, f"/status {tag}" if tag else "/status")

        @app_commands.command(description="Block publishing a release until /unhold")
        @app_commands.describe(tag="release tag", reason="why (shown in the channel)")
        @app_commands.autocomplete(tag=tags)
        async def hold(
            interaction: discord.Interaction[Any], tag: str, reason: str | None = None
        ) -> None:
            await run(interaction, f"/hold {tag} {reason}" if reason else f"/hold {tag}")

        @app_commands.command(description="Lift a hold (the holder or the release manager)")
        @app_commands.describe(tag="release tag")
        @app_commands.autocomplete(tag=tags)
        async def unhold(interaction: discord.Interaction[Any], tag: str) -> None:
            await run(interaction, f"/unhold {tag}")

        @app_commands.command(description="Release manager: the publish plan, then confirm")
        @app_commands.describe(
            tag="release tag",
            confirm="the code from the publish plan",
            login="the code the Sigstore login page showed (when the plan signs files)",
        )
        @app_commands.autocomplete(tag=tags)
        async def publish(
            interaction: discord.Interaction[Any],
            tag: str,
            confirm: str | None = None,
            login: str | None = None,
        ) -> None:
            line = f"/publish {tag} confirm {confirm}" if confirm else f"/publish {tag}"
            await run(interaction, f"{line} {login}" if confirm and login else line)

        @app_commands.command(description="Release manager: withdraw every claim of a release")
        @app_commands.describe(tag="release tag")
        @app_commands.autocomplete(tag=tags)
        async def respin(interaction: discord.Interaction[Any], tag: str) -> None:
            await run(interaction, f"/respin {tag}")

        @app_commands.command(description="Release manager: lift one rule for one release")
        @app_commands.describe(
            tag="release tag",
            target="a file (as relbot manifest prints it) or a role",
            reason="why",
        )
        @app_commands.autocomplete(tag=tags)
        async def waive(
            interaction: discord.Interaction[Any], tag: str, target: str, reason: str | None = None
        ) -> None:
            line = f"/waive {tag} {target}" + (f" {reason}" if reason else "")
            await run(interaction, line)

        @app_commands.command(description="Release manager: undo a waiver")
        @app_commands.describe(tag="release tag", target="the waived file or role")
        @app_commands.autocomplete(tag=tags)
        async def unwaive(interaction: discord.Interaction[Any], tag: str, target: str) -> None:
            await run(interaction, f"/unwaive {tag} {target}")

        @app_commands.command(description="Release manager: cancel a publish not yet public")
        @app_commands.describe(tag="release tag")
        @app_commands.autocomplete(tag=tags)
        async def abort(interaction: discord.Interaction[Any], tag: str) -> None:
            await run(interaction, f"/abort {tag}")

        @app_commands.command(
            description="Release manager: the forum announcement, or your words in it"
        )
        @app_commands.describe(
            tag="release tag", text="your own words in the announcement (leave out to read it)"
        )
        @app_commands.autocomplete(tag=tags)
        async def announce(
            interaction: discord.Interaction[Any], tag: str, text: str | None = None
        ) -> None:
            await run(interaction, f"/announce {tag} {text}" if text else f"/announce {tag}")

        @app_commands.command(name="help", description="relbot's commands, with examples")
        @app_commands.describe(command="one command to explain, e.g. ready")
        async def help_(interaction: discord.Interaction[Any], command: str | None = None) -> None:
            await run(interaction, f"/help {command}" if command else "/help")

        return [
            ready,
            unready,
            status,
            hold,
            unhold,
            publish,
            respin,
            waive,
            unwaive,
            abort,
            announce,
            help_,
        ]
