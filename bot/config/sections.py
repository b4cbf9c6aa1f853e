"""The tables of the config file, one model each, validated strictly: unknown keys and wrong
types are errors that name the key; every string is refused with a control character in it."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    field_validator,
)

from bot.config.cycle_copy import DEFAULT_URL, is_url
from bot.config.values import (
    ApiUrl,
    BindHost,
    DiscordId,
    DiscordIdNumber,
    PathText,
    Port,
    SlackChannel,
    SlackUser,
    checked_path,
    checked_url,
)
from bot.domain.announcement import DEFAULT_CHANGELOG
from bot.domain.login import endpoint_problem
from bot.domain.text import is_safe, shown

MAX_SECONDS = 86_400  # poll_interval, confirm_timeout: a day at most
_BRANCH_RE = re.compile(r"\d+\.\d+")


def _texts(value: Any) -> Iterator[str]:
    """Every string in a (shallow) config value: itself, or the items, keys and values."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            todo += list(item)


class _Section(BaseModel):
    # strict: a TOML string or float is not silently turned into the int or bool a key needs
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @field_validator("*")
    @classmethod
    def _no_control_characters(cls, value: Any) -> Any:
        # A NUL in a path is a traceback in the middle of a command; a newline or an
        # escape in a name would reach the channel and the logs. Refused where written.
        for text in _texts(value):
            if not is_safe(text):
                raise ValueError(f"{shown(text)!r} contains a control character; remove it")
        return value


# TOML has arrays, not tuples: the one place a list must be taken as a pair.
Pair = Annotated[tuple[str, str], Strict(False)]


class StorageConfig(_Section):
    kind: Literal["local", "sftp"] = "local"
    staging: PathText = "relbot-data/staging"
    public: PathText = "relbot-data/public"
    host: str | None = None
    port: Port = 22
    user: str | None = None
    key_file: PathText | None = None
    known_hosts: PathText | None = None
    passphrase_env: str | None = None  # env var holding the key's passphrase, if any
    group: str | None = None  # e.g. "downloads": published files get this group
    work: str | None = None  # the bot's own folder (copies, aside, lock); default beside public


class SignaturesConfig(_Section):
    # None: as the profile says (cpython: required from 3.10); false: an explicit opt-out,
    # which `relbot check` warns about; true: required for every release.
    require: bool | None = None
    trusted_root: str = "production"
    identities: dict[str, Pair] = Field(default_factory=dict)
    # The OIDC issuer of the login at /publish (None: the trusted root's, else Sigstore's).
    issuer: str | None = None

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str | None) -> str | None:
        if value is not None and (problem := endpoint_problem(value)) is not None:
            raise ValueError(f"{value!r} {problem}")
        return value

    @field_validator("trusted_root")
    @classmethod
    def _root(cls, value: str) -> str:
        return value if value in ("production", "staging") else checked_path(value)

    @field_validator("identities")
    @classmethod
    def _branches(cls, value: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
        for branch in value:
            if not _BRANCH_RE.fullmatch(branch):
                raise ValueError(f"{branch!r} is not a branch like 3.14")
        return value


class PydotorgConfig(_Section):
    kind: Literal["none", "api"] = "none"
    url: ApiUrl = "https://www.python.org/api/v1/"
    auth_env: str = "PYDOTORG_AUTH"
    # true: after registration, the Release is made public through API v2 (a staff token)
    release_page: bool = False
    token_env: str = "PYDOTORG_TOKEN"
    # seconds: the longest wait for python.org's rate limit (API v1 allows 600 requests an
    # hour and asks for up to an hour); a longer one stops the registration with a sentence
    max_wait: int = Field(default=900, ge=0, le=MAX_SECONDS)


def public_url(value: str) -> str:
    """``value`` as a base URL ending in ``/``: ``https://``, or ``http://`` only on this
    machine (a test double), so keys and checked bytes never cross a network in clear.
    (A local rule for the tables of the announcement; raises ValueError.)"""
    url = urlsplit(value)
    host = url.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not (url.scheme == "https" and host) and not (url.scheme == "http" and loopback):
        raise ValueError("must be an https:// URL (http:// only on 127.0.0.1 or localhost)")
    return value if value.endswith("/") else value + "/"


class DownloadsConfig(_Section):
    """Where the public folder is served: every published file is fetched there and
    compared with the plan before the release page and the announcement."""

    url: str = "https://www.python.org/ftp/python/"

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return public_url(value)


class DiscourseConfig(_Section):
    """The forum the announcement is posted on, as the RM (a single-user API key)."""

    url: str = "https://discuss.python.org/"
    api_key_env: str = "DISCOURSE_API_KEY"
    username: str  # the key's user: the topic is posted as this user
    category: int = Field(default=23, ge=1)  # discuss.python.org's "Core Development"
    tags: list[str] = Field(default_factory=lambda: ["release"])
    template: str | None = None  # a Markdown file: the frame of the text ({branch} allowed)
    changelog: str = DEFAULT_CHANGELOG  # URL template ({tag}, {version}, {branch})

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return public_url(value)


class CdnConfig(_Section):
    purge: list[ApiUrl] | None = None  # URL templates; None: the profile's ([pydotorg] purge)


class SlackConfig(_Section):
    bot_token_env: str = "SLACK_BOT_TOKEN"
    channel: SlackChannel
    mode: Literal["socket", "http"] = "socket"
    app_token_env: str = "SLACK_APP_TOKEN"
    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    port: Port = 3000
    api_url: ApiUrl = "https://slack.com/api/"
    # "rb-" names the slash commands /rb-ready, /rb-publish, … (names are global in a workspace)
    command_prefix: str = Field(default="", pattern=r"^([a-z0-9][a-z0-9_-]{0,19})?$")


class DiscordConfig(_Section):
    token_env: str = "DISCORD_TOKEN"
    guild: DiscordIdNumber
    channel: DiscordIdNumber
    api_url: ApiUrl = "https://discord.com/api/v10"


class HealthConfig(_Section):
    host: BindHost = "127.0.0.1"  # "0.0.0.0" lets Prometheus scrape a container
    port: Port = 9110


class PersonConfig(_Section):
    rm: list[str] = Field(default_factory=list)
    roles: list[str] = Field(default_factory=list)
    slack: SlackUser | None = None
    discord: DiscordId | None = None

    @field_validator("rm")
    @classmethod
    def _branches(cls, value: list[str]) -> list[str]:
        for branch in value:
            if not _BRANCH_RE.fullmatch(branch):
                raise ValueError(f"{branch!r} is not a branch like 3.14")
        return value


class ConfigModel(_Section):
    profile: PathText = "cpython"  # a built-in profile's name, or a file
    state: PathText = "relbot-data/state.db"
    poll_interval: int = Field(default=30, ge=1, le=MAX_SECONDS)
    confirm_timeout: int = Field(default=600, ge=10, le=MAX_SECONDS)
    release_cycle: str = DEFAULT_URL  # URL or file: each branch's status
    storage: StorageConfig = StorageConfig()
    signatures: SignaturesConfig = SignaturesConfig()
    pydotorg: PydotorgConfig = PydotorgConfig()
    cdn: CdnConfig | None = None
    slack: SlackConfig | None = None
    discord: DiscordConfig | None = None
    health: HealthConfig | None = None
    downloads: DownloadsConfig | None = None
    discourse: DiscourseConfig | None = None
    people: dict[str, PersonConfig] = Field(default_factory=dict)

    @field_validator("release_cycle")
    @classmethod
    def _url_or_file(cls, value: str) -> str:
        return checked_url(value) if is_url(value) else checked_path(value)
