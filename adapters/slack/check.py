"""``relbot check`` on Slack: whether the tokens, the channel, the scopes and the people's IDs
would work on release day, each problem a sentence with its fix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from adapters.slack.channel import error_code, operator_fix


def granted_scopes(headers: Mapping[str, Any]) -> set[str] | None:
    """The token's scopes, which Slack lists in a header of every answer (None without it)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "x-oauth-scopes" not in lowered:
        return None
    return {s.strip() for s in str(lowered["x-oauth-scopes"]).split(",")}


class WorkspaceCheck:
    """What :meth:`SlackPlatform.check` asks Slack, with a blocking client (``relbot check``
    runs it in a thread)."""

    def __init__(
        self,
        *,
        bot_token: str,
        api_url: str,
        channel: str,
        mode: Literal["socket", "http"],
        app_token: str | None,
        people: Mapping[str, str],
    ) -> None:
        self.mode = mode
        self._bot_token = bot_token
        self._api_url = api_url
        self._channel = channel
        self._app_token = app_token
        self._people = dict(people)  # person → Slack user ID

    def problems(self) -> list[str]:
        """Each problem found, a sentence with its fix; none when all would work."""
        client = WebClient(token=self._bot_token, base_url=self._api_url)
        try:
            try:
                answer = client.auth_test()
            except SlackApiError as err:  # nothing else can be checked with this token
                return [
                    f"slack.bot_token_env: Slack refused the bot token ({error_code(err)}); "
                    "copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions "
                    "page."
                ]
            scopes = granted_scopes(answer.headers or {})
            return (
                self._check_scopes(scopes)
                + self._check_app_token(client)
                + self._check_channel(client, scopes)
                + self._check_people(client)
            )
        except (SlackClientError, OSError) as err:  # urllib's URLError is an OSError
            return [f"slack.api_url: cannot reach {self._api_url} ({_why(err)})."]

    def _check_scopes(self, scopes: set[str] | None) -> list[str]:
        """The scopes posting needs (None: Slack did not say which the token has)."""
        if scopes is None:
            return []
        return [
            str(operator_fix("missing_scope", self._channel, scope))
            for scope in ("commands", "chat:write")
            if scope not in scopes
        ]

    def _check_app_token(self, client: WebClient) -> list[str]:
        if self.mode != "socket":
            return []
        try:
            client.apps_connections_open(app_token=self._app_token or "")
        except SlackApiError as err:
            return [
                f"slack.app_token_env: Slack refused the app token ({error_code(err)}); "
                "create an app-level token with connections:write under Basic Information "
                "and enable Socket Mode."
            ]
        return []

    def _check_channel(self, client: WebClient, scopes: set[str] | None) -> list[str]:
        """The channel exists, is not archived, and the bot is in it (so it may post) and
        may read its history (so a restarted bot finds the announcement it posted)."""
        try:
            answer = client.conversations_info(channel=self._channel)
        except SlackApiError as err:
            fix = operator_fix(error_code(err), self._channel, err.response.get("needed"))
            return [fix or f"slack.channel: Slack answered {error_code(err)} for the channel."]
        channel = answer.get("channel") or {}
        name = f"#{channel.get('name')} ({self._channel})" if channel.get("name") else self._channel
        if channel.get("is_archived"):
            return [str(operator_fix("is_archived", name))]
        if not channel.get("is_member"):
            return [str(operator_fix("not_in_channel", name))]
        history = "groups:history" if channel.get("is_private") else "channels:history"
        if scopes is not None and history not in scopes:
            return [str(operator_fix("missing_scope", name, history))]
        return []

    def _check_people(self, client: WebClient) -> list[str]:
        """Each configured person's ID is an active user of this workspace (a name such as
        "hugo" or an ID from another workspace would never be mentioned)."""
        problems: list[str] = []
        for person, user in self._people.items():
            key = f"people.{person}.slack"
            try:
                found = client.users_info(user=user).get("user") or {}
            except SlackApiError as err:
                code = error_code(err)
                if code in ("user_not_found", "users_not_found"):
                    problems.append(
                        f"{key}: Slack has no user {user} in this workspace; copy the member "
                        "ID from their profile (⋮, Copy member ID)."
                    )
                    continue
                fix = operator_fix(code, self._channel, err.response.get("needed"))
                problems.append(fix or f"{key}: Slack answered {code} for user {user}.")
                if fix is not None:  # the same for every person: said once
                    break
                continue
            if found.get("deleted"):
                problems.append(f"{key}: Slack user {user} is deactivated; remove or replace it.")
        return problems

    # -- requests ----------------------------------------------------------------------------


def _why(err: Exception) -> str:
    """What went wrong in the operator's words: urllib's URLError wraps the socket's error
    (``Connection refused``), which its class name alone hides."""
    reason: object = getattr(err, "reason", None) or err
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(err).__name__
