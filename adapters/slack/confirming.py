"""The plan's Publish button and, for a plan that signs files, the login dialog it opens: a
click or a submitted dialog becomes the confirm line typed by whoever clicked, so the gate
authorizes it exactly like a typed one."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.blocks import LOGIN_INPUT, login_modal, reply_payload, section
from adapters.slack.channel import error_code
from adapters.slack.listeners import Listeners
from bot.ports.messages import ConfirmPrompt, Reply, Tone

log = logging.getLogger(__name__)


class PublishConfirmation:
    """The listeners bolt calls for the Publish button and the login dialog."""

    def __init__(self, client: AsyncWebClient, listeners: Listeners) -> None:
        self._client = client
        self._listeners = listeners  # asks the gate, answers, counts what is under way

    async def on_publish_click(
        self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond
    ) -> None:
        """The plan's Publish button: the same line as a typed confirmation, so the gate
        authorizes the click exactly like one."""
        self._listeners.track()
        await ack()
        clicker = str(body["user"]["id"])
        prompt = _prompt_from_button(action.get("value"))
        if prompt is None:
            reply = Reply(
                "That button carries no publish plan; type /publish TAG for a new one.",
                Tone.REFUSAL,
            )
            await self._listeners.respond(respond, reply_payload(reply))
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
                await self._listeners.respond(respond, reply_payload(reply))
            return
        progress = f"Publishing {prompt.tag}: confirmed by <@{clicker}>; checking staging…"
        await self._listeners.respond(
            respond, {"text": progress, "blocks": [section(f"⏳ {progress}")]}, replace=True
        )
        reply = await self._listeners.ask(clicker, prompt.line)
        await self._listeners.respond(respond, reply_payload(reply), replace=True)

    async def on_login_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """The login dialog submitted: the confirm line typed with the login page's code, by
        whoever submitted; the answer goes where the plan's button answered."""
        self._listeners.track()
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
        reply = await self._listeners.ask(
            submitter, prompt.with_login(login) if login else prompt.line
        )
        payload = reply_payload(reply)
        response = await webhook.send(
            text=payload["text"], blocks=payload.get("blocks"), replace_original=True
        )
        if response.status_code != 200:
            log.warning("slack: response_url answered %d: %s", response.status_code, response.body)


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
