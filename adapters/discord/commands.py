"""relbot's slash commands on Discord: each contract command with its options (role
choices, tag autocomplete), the tree that holds them, and their sync to the one server.

A command turns its options back into the command line the gate reads; who may run it is
the gate's business, so no command carries ``default_permissions``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import discord
from discord import app_commands

from adapters.discord.client import RelbotClient
from adapters.discord.errors import DiscordError

log = logging.getLogger(__name__)

SYNC_STAMP = "discord-commands.sha256"  # beside the state file: the tree last synced

# What a command calls: the platform's run (the line, answered), and its tag suggestions.
Run = Callable[[discord.Interaction[Any], str], Awaitable[None]]
TagChoices = Callable[
    [discord.Interaction[Any], str], Coroutine[Any, Any, list[app_commands.Choice[str]]]
]


class RelbotTree(app_commands.CommandTree[RelbotClient]):
    """The commands' tree; a command that fails gets a one-sentence answer."""

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


def slash_commands(
    run: Run, tags: TagChoices, role_names: Sequence[str]
) -> list[app_commands.Command[Any, Any, None]]:
    """The contract's commands, each running its command line through ``run``."""
    roles = [app_commands.Choice(name=role, value=role) for role in role_names]

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


class CommandSync:
    """Registers the commands in the server at each start, unless the tree is the one last
    synced there (the digest kept in ``stamp``; None: sync at every start)."""

    def __init__(self, tree: RelbotTree, guild: discord.Object, stamp: Path | None) -> None:
        self._tree = tree
        self._guild = guild
        self._sync_stamp = stamp

    async def sync(self, application: int | None) -> None:
        """Sync the tree unless it is unchanged; raises DiscordError when Discord does not let
        the bot register commands in the server."""
        digest = self._tree_digest(application)
        if self._synced() == digest:
            log.info("discord: the commands are unchanged since the last sync; not synced")
            return
        try:
            await self._tree.sync(guild=self._guild)
        except discord.Forbidden as err:
            raise DiscordError(
                f"discord.guild: Discord does not let the bot register commands in server "
                f"{self._guild.id}; invite it there with the bot and applications.commands "
                "scopes (docs/discord.md)."
            ) from err
        self._remember_sync(digest)

    def _tree_digest(self, application: int | None) -> str:
        """What a sync would send, and where: the same digest means nothing to sync (Discord
        limits how many commands a bot may create a day)."""
        commands = [c.to_dict(self._tree) for c in self._tree.get_commands(guild=self._guild)]
        payload = {"application": application, "guild": self._guild.id, "tree": commands}
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
