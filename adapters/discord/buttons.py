"""The buttons and the dialog that confirm a publish plan on Discord.

The plan's **Publish TAG** button asks "Publish TAG?" with **Yes** and **Cancel**, as Slack's
confirm dialog does; a plan that signs files has a button that opens the login dialog
instead. A click or a submitted dialog is the confirm line typed by whoever did it: the gate
authorizes it exactly like a typed one. Each custom ID carries the tag and the code, so a
button works after a restart.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Self

import discord

from adapters.discord.client import RelbotClient
from adapters.discord.embeds import clip

PUBLISH_ID = r"relbot:publish:(?P<tag>[^:]+):(?P<code>[^:]+)"
CONFIRM_ID = r"relbot:confirm:(?P<tag>[^:]+):(?P<code>[^:]+)"
CANCEL_ID = r"relbot:cancel:(?P<tag>[^:]+)"
LOGIN_ID = r"relbot:login:(?P<tag>[^:]+):(?P<code>[^:]+)"
PLAN_ID = r"relbot:(?P<action>[a-z]+):(?P<tag>[^:]+)(:(?P<code>[^:]+))?"  # any of the above
MAX_MODAL_TITLE = 45  # Discord's limit on a modal's title and a label's text


class PlanButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]],
    template=PLAN_ID,
):
    """A button of a publish plan, whose custom ID (``relbot:ACTION:TAG:CODE``, or
    ``relbot:ACTION:TAG`` for a kind that needs no code) carries what a click needs, so a
    click works after a restart: each kind, with its own template, is registered with
    ``add_dynamic_items``. A kind names its ``action``, ``label`` (with ``{tag}``) and
    ``style``, and says what a click does."""

    action: ClassVar[str]
    label: ClassVar[str]
    style: ClassVar[discord.ButtonStyle] = discord.ButtonStyle.danger

    def __init__(self, tag: str, code: str = "") -> None:
        super().__init__(
            discord.ui.Button(
                label=self.label.format(tag=tag),
                style=self.style,
                custom_id=f"relbot:{self.action}:{tag}" + (f":{code}" if code else ""),
            )
        )
        self.tag = tag
        self.code = code

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[discord.Client],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        return cls(match["tag"], match.groupdict().get("code") or "")


class LoginButton(PlanButton, template=LOGIN_ID):
    """The **Publish TAG** button of a plan that signs files: it opens :class:`LoginModal`,
    the confirm dialog with the login page's code as its one field. The button works after a
    restart, the login itself does not: the gate then says to ask for a new plan."""

    action = "login"
    label = "Publish {tag}"

    async def callback(self, interaction: discord.Interaction[discord.Client]) -> None:
        await interaction.response.send_modal(LoginModal(self.tag, self.code))


class LoginModal(discord.ui.Modal):
    """ "Publish TAG?" with one field: the code the Sigstore login page showed. Submitting it
    is the confirm line typed with that code, by whoever submitted (the gate decides)."""

    def __init__(self, tag: str, code: str) -> None:
        super().__init__(title=clip(f"Publish {tag}?", MAX_MODAL_TITLE), timeout=None)
        self.tag = tag
        self.code = code
        self.login: discord.ui.TextInput[LoginModal] = discord.ui.TextInput(
            custom_id="login", min_length=4, max_length=512, required=True
        )
        self.add_item(
            discord.ui.Label(
                text="Code from the Sigstore login page",
                description=clip(
                    f"Every file of {tag} is signed with your login and becomes public at "
                    "once; published files cannot be taken back.",
                    100,
                ),
                component=self.login,
            )
        )

    async def on_submit(self, interaction: discord.Interaction[discord.Client]) -> None:
        client = interaction.client
        if isinstance(client, RelbotClient):
            await client.platform.confirm(
                interaction, self.tag, self.code, login=self.login.value.strip()
            )


class PublishButton(PlanButton, template=PUBLISH_ID):
    """The plan's **Publish TAG** button. A click only asks: "Publish TAG?" with
    :class:`ConfirmButton` and :class:`CancelButton`, as Slack's confirm dialog does; the gate
    authorizes the confirming click like the typed confirm line."""

    action = "publish"
    label = "Publish {tag}"

    async def callback(self, interaction: discord.Interaction[discord.Client]) -> None:
        view = discord.ui.View(timeout=None)
        view.add_item(ConfirmButton(self.tag, self.code))
        view.add_item(CancelButton(self.tag))
        await interaction.response.send_message(
            confirm_question(self.tag), view=view, ephemeral=True
        )


def confirm_question(tag: str) -> str:
    return (
        f"Publish {tag} now? Every file of the plan becomes public at once, then {tag} is "
        "registered and announced. Published files cannot be taken back."
    )


class ConfirmButton(PlanButton, template=CONFIRM_ID):
    """**Yes, publish TAG**: the confirm line, typed by whoever clicked (the gate decides)."""

    action = "confirm"
    label = "Yes, publish {tag}"

    async def callback(self, interaction: discord.Interaction[discord.Client]) -> None:
        client = interaction.client
        if isinstance(client, RelbotClient):
            await client.platform.confirm(interaction, self.tag, self.code)


class CancelButton(PlanButton, template=CANCEL_ID):
    """**Cancel**: nothing happens; the plan's button works until its code expires. Its
    custom ID carries the tag only (``relbot:cancel:TAG``)."""

    action = "cancel"
    label = "Cancel"
    style = discord.ButtonStyle.secondary

    async def callback(self, interaction: discord.Interaction[discord.Client]) -> None:
        await interaction.response.edit_message(
            content=f"{self.tag} was not published. The plan's button works until its code "
            "expires.",
            view=None,
        )
