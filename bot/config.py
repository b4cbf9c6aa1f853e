"""The configuration file (TOML), validated strictly: unknown keys and wrong types are errors
that name the key. Secrets are never in the file, only the names of environment variables."""

from __future__ import annotations

import os
import posixpath
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, field_validator

from bot.domain.profile import Profile, load_profile
from bot.domain.text import is_safe, not_utf8, shown
from bot.errors import ConfigError
from bot.release_cycle import CACHE_NAME, DEFAULT_URL, CycleCopy, local_copy
from bot.storage.overlap import folders_overlap, overlap_message

DEFAULT_CONFIG_NAME = "relbot.toml"
_BRANCH_RE = re.compile(r"\d+\.\d+")


class _Section(BaseModel):
    # strict: a TOML string or float is not silently turned into the int or bool a key needs
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @field_validator("*")
    @classmethod
    def _no_control_characters(cls, value: Any) -> Any:
        # A NUL in a path is a traceback in the middle of a command; a newline or an
        # escape in a name would reach the channel and the logs. Refused where written.
        texts = list(value) if isinstance(value, list | tuple | dict) else [value]
        for text in texts:
            if isinstance(text, str) and not is_safe(text):
                raise ValueError(f"{shown(text)!r} contains a control character; remove it")
        return value


# TOML has arrays, not tuples: the one place a list must be taken as a pair.
Pair = Annotated[tuple[str, str], Strict(False)]


class StorageConfig(_Section):
    kind: Literal["local", "sftp"] = "local"
    staging: str = "relbot-data/staging"
    public: str = "relbot-data/public"
    host: str | None = None
    port: int = Field(default=22, ge=1, le=65535)
    user: str | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    passphrase_env: str | None = None  # env var holding the key's passphrase, if any
    group: str | None = None  # e.g. "downloads": published files get this group
    work: str | None = None  # the bot's own folder (copies, aside, lock); default beside public


class SignaturesConfig(_Section):
    require: bool = False
    trusted_root: str = "production"
    identities: dict[str, Pair] = Field(default_factory=dict)

    @field_validator("identities")
    @classmethod
    def _branches(cls, value: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
        for branch in value:
            if not _BRANCH_RE.fullmatch(branch):
                raise ValueError(f"{branch!r} is not a branch like 3.14")
        return value


class PydotorgConfig(_Section):
    kind: Literal["none", "api"] = "none"
    url: str = "https://www.python.org/api/v1/"
    auth_env: str = "PYDOTORG_AUTH"


class CdnConfig(_Section):
    purge: list[str] | None = None  # URL templates; None: the profile's ([pydotorg] purge)


class SlackConfig(_Section):
    bot_token_env: str = "SLACK_BOT_TOKEN"
    channel: str
    mode: Literal["socket", "http"] = "socket"
    app_token_env: str = "SLACK_APP_TOKEN"
    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    port: int = Field(default=3000, ge=1, le=65535)
    api_url: str = "https://slack.com/api/"


class DiscordConfig(_Section):
    token_env: str = "DISCORD_TOKEN"
    guild: int
    channel: int
    api_url: str = "https://discord.com/api/v10"


class HealthConfig(_Section):
    host: str = "127.0.0.1"  # "0.0.0.0" lets Prometheus scrape a container
    port: int = Field(default=9110, ge=1, le=65535)


class PersonConfig(_Section):
    rm: list[str] = Field(default_factory=list)
    roles: list[str] = Field(default_factory=list)
    slack: str | None = None
    discord: str | None = None

    @field_validator("rm")
    @classmethod
    def _branches(cls, value: list[str]) -> list[str]:
        for branch in value:
            if not _BRANCH_RE.fullmatch(branch):
                raise ValueError(f"{branch!r} is not a branch like 3.14")
        return value


class ConfigModel(_Section):
    profile: str = "cpython"
    state: str = "relbot-data/state.db"
    poll_interval: int = Field(default=30, ge=1)
    confirm_timeout: int = Field(default=600, ge=10)
    release_cycle: str = DEFAULT_URL  # URL or file: each branch's status
    storage: StorageConfig = StorageConfig()
    signatures: SignaturesConfig = SignaturesConfig()
    pydotorg: PydotorgConfig = PydotorgConfig()
    cdn: CdnConfig | None = None
    slack: SlackConfig | None = None
    discord: DiscordConfig | None = None
    health: HealthConfig | None = None
    people: dict[str, PersonConfig] = Field(default_factory=dict)


class Config:
    """A validated configuration, with paths resolved against the config file's folder."""

    def __init__(self, model: ConfigModel, base: Path, origin: str) -> None:
        self.model = model
        self.base = base
        self.origin = origin  # the file it came from, or "built-in default"
        self.profile: Profile = load_profile(model.profile, base)
        self._check_people()
        self.use_release_cycle(local_copy(model.release_cycle, base, self.release_cycle_cache))

    @property
    def release_cycle_cache(self) -> Path:
        """Where the last copy of the release cycle read from its URL is kept."""
        return self.state_path.parent / CACHE_NAME

    def use_release_cycle(self, copy: CycleCopy) -> None:
        """Take branch statuses from ``copy`` (what ``relbot run`` and ``check`` read afresh)."""
        self.release_cycle = copy
        self.profile = self.profile.with_statuses(copy.cycle.statuses())

    @property
    def people(self) -> Mapping[str, PersonConfig]:
        return self.model.people

    @property
    def state_path(self) -> Path:
        return self.path(self.model.state)

    def path(self, value: str) -> Path:
        """A path from the config, relative to the config file's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.base / path

    def platforms(self) -> list[str]:
        """The chat platforms configured (a platform is on when its table is present)."""
        return [name for name in ("slack", "discord") if getattr(self.model, name) is not None]

    def secret(self, key: str, env_name: str) -> str:
        """Read a secret from the environment; ``key`` names the config key for the error."""
        value = os.environ.get(env_name)
        if not value:
            raise ConfigError(f"{key}: the environment variable {env_name} is not set.")
        return value

    def _check_people(self) -> None:
        roles = self.profile.roles
        for name, person in self.model.people.items():
            for role in person.roles:
                if role not in roles:
                    raise ConfigError(
                        f"{self.origin}: people.{name}.roles: {role!r} is not a role of the "
                        f"{self.profile.name} profile ({', '.join(roles)})."
                    )
        storage = self.model.storage
        if storage.kind == "sftp":
            for key in ("host", "user", "key_file", "known_hosts"):
                if getattr(storage, key) is None:
                    raise ConfigError(f"{self.origin}: storage.{key} is required for sftp.")
            # Paths on the server: compared as written (``relbot check`` resolves them there).
            staging, public = (
                posixpath.normpath(storage.staging),
                posixpath.normpath(storage.public),
            )
            overlap = folders_overlap(PurePosixPath(staging), PurePosixPath(public))
        else:  # real paths: a symlink must not hide that both are one folder
            staging, public = (
                os.path.realpath(self.path(storage.staging)),
                os.path.realpath(self.path(storage.public)),
            )
            overlap = folders_overlap(Path(staging), Path(public))
        if overlap:
            raise ConfigError(f"{self.origin}: {overlap_message(staging, public)}")
        self._check_work(staging, public)

    def _check_work(self, staging: str, public: str) -> None:
        """``[storage] work``: the bot's own folder, never staging or public themselves, nor
        inside staging (the uploaders' area) or holding either of them."""
        work = self.model.storage.work
        if work is None:
            return
        if self.model.storage.kind == "sftp":
            if not posixpath.isabs(work):
                raise ConfigError(
                    f"{self.origin}: storage.work: {work!r} must be an absolute path on the server."
                )
            folder: PurePosixPath | Path = PurePosixPath(posixpath.normpath(work))
            roots: tuple[PurePosixPath | Path, ...] = (
                PurePosixPath(staging),
                PurePosixPath(public),
            )
        else:
            folder = Path(os.path.realpath(self.path(work)))
            roots = (Path(staging), Path(public))
        staging_root, public_root = roots
        if folder == public_root:
            raise ConfigError(
                f"{self.origin}: storage.work: {folder} is public itself; give the bot a "
                "folder of its own on public's filesystem (the default is beside public)."
            )
        if folder.is_relative_to(staging_root):
            raise ConfigError(
                f"{self.origin}: storage.work: {folder} is staging or inside it, where uploaders "
                "write; give the bot a folder of its own on public's filesystem."
            )
        if staging_root.is_relative_to(folder) or public_root.is_relative_to(folder):
            raise ConfigError(
                f"{self.origin}: storage.work: {folder} holds staging or public; give the bot "
                "a folder of its own beside them."
            )


def load_config(path: Path | None = None, *, cwd: Path | None = None) -> Config:
    """Load ``path``; without one, ``./relbot.toml`` if present, else the built-in default.

    Raises :class:`ConfigError` with one sentence per problem, each naming its key.
    """
    cwd = cwd or Path.cwd()
    if path is None and (cwd / DEFAULT_CONFIG_NAME).is_file():
        path = cwd / DEFAULT_CONFIG_NAME
    if path is None:
        return Config(ConfigModel.model_validate(DEFAULT_CONFIG), cwd, "built-in default")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the config ({err.strerror}).") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: {not_utf8(err)}") from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML ({err}).") from err
    return Config(parse_model(data, str(path)), path.resolve().parent, str(path))


def parse_model(data: Mapping[str, Any], origin: str) -> ConfigModel:
    try:
        return ConfigModel.model_validate(data)
    except ValidationError as err:
        raise ConfigError("\n".join(_describe(origin, e) for e in err.errors())) from err


def _describe(origin: str, error: Any) -> str:
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{origin}: {key}: unknown key."
    if error["type"] == "missing":
        return f"{origin}: {key}: required key is missing."
    return f"{origin}: {key}: {error['msg']}."


# The embedded local default: a demo team rehearsing on folders under ./relbot-data/.
DEFAULT_CONFIG: dict[str, Any] = {
    "profile": "cpython",
    "state": "relbot-data/state.db",
    "storage": {
        "kind": "local",
        "staging": "relbot-data/staging",
        "public": "relbot-data/public",
    },
    "people": {
        "hugo": {"rm": ["3.14", "3.15"], "roles": ["source", "docs"]},
        "steve": {"roles": ["windows"]},
        "ned": {"roles": ["macos"]},
    },
}
