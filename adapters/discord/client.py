"""The discord.py client relbot runs. It knows its platform: after login it asks it to set
up (buttons, commands), and a button rebuilt from its custom ID after a restart finds the
gate through it."""

from __future__ import annotations

from typing import Any, Protocol

import discord


class ClientHooks(Protocol):
    """What the client and its buttons call on the platform (``DiscordPlatform``)."""

    async def setup(self, client: RelbotClient) -> None: ...

    async def confirm(
        self,
        interaction: discord.Interaction[Any],
        tag: str,
        code: str,
        *,
        login: str | None = None,
    ) -> None: ...


class RelbotClient(discord.Client):
    """A client that knows its platform (the Publish button finds the gate through it)."""

    def __init__(self, platform: ClientHooks, **options: Any) -> None:
        super().__init__(**options)
        self.platform = platform

    async def setup_hook(self) -> None:
        await self.platform.setup(self)
