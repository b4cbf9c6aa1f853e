"""The configuration file (TOML), validated strictly: unknown keys and wrong types are errors
that name the key. Secrets are never in the file, only the names of environment variables."""

from __future__ import annotations

import ipaddress
import os
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
)

from bot.domain.announcement import DEFAULT_CHANGELOG, AnnouncementError, check_template
from bot.domain.login import endpoint_problem
from bot.domain.profile import Profile, load_profile
from bot.domain.signing import signatures_required
from bot.domain.tags import ReleaseTag
from bot.domain.text import is_safe, not_utf8, shown
from bot.errors import ConfigError
from bot.pydotorg.release_cycle import CACHE_NAME, DEFAULT_URL, CycleCopy, is_url, local_copy
from bot.regular_files import UnreadableFile, read_regular_file
from bot.storage.overlap import folders_overlap, overlap_message

DEFAULT_CONFIG_NAME = "relbot.toml"
MAX_CONFIG_BYTES = 1 << 20  # a real config is a few kB
MAX_SECONDS = 86_400  # poll_interval, confirm_timeout: a day at most
BOT_ACTOR = "relbot"  # bot.service.pipeline.steps.BOT: the actor of the bot's own events
_BRANCH_RE = re.compile(r"\d+\.\d+")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# Slack's IDs: U or W for a user, C or G for a channel, then capitals and digits.
_SLACK_USER_RE = re.compile(r"[UW][A-Z0-9]{1,31}")
_SLACK_CHANNEL_RE = re.compile(r"[CG][A-Z0-9]{1,31}")
_SNOWFLAKE_RE = re.compile(r"[1-9][0-9]{16,19}")  # Discord's IDs: 17 to 20 digits
_HOST_LABEL_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_LOOPBACK_NAMES = ("localhost",)
_NAME_MAX = 255  # bytes in one path component (NAME_MAX)
_PATH_MAX = 4095  # bytes in a whole path (PATH_MAX, less the NUL)


# -- one rule per kind of value: every key of that kind, in any table, calls the same one -----


def url_problem(value: str) -> str:
    """Why ``value`` cannot be the address of a service relbot sends a secret or trusts an
    answer from ("" when it can): ``https://``, or ``http://`` to this machine only."""
    if any(char.isspace() for char in value):
        return f"{value!r} contains a space; write the URL alone"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as err:
        return f"{value!r} is not a URL ({err})"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not _SCHEME_RE.match(value):
        return f"{value!r} is not an https:// URL (only https://, or http:// to this machine)"
    host = parts.hostname or ""
    if not host:
        return f"{value!r} names no host"
    if parts.username is not None or parts.password is not None:
        return (
            f"{value!r} carries a user name or password; secrets come from the environment "
            "only, write the URL without them"
        )
    if port == 0:
        return f"{value!r} has port 0"
    if scheme == "http" and not is_loopback(host):
        return (
            f"{value!r} is plain http: the key or token would cross the network in clear "
            "text; use https:// (http:// is only for 127.0.0.1, ::1 or localhost)"
        )
    return ""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, as a URL gives it) is this machine."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def checked_url(value: str) -> str:
    """The pydantic rule of every URL key (:data:`ApiUrl`); raises ValueError."""
    if problem := url_problem(value):
        raise ValueError(problem)
    return value


def path_problem(value: str) -> str:
    """Why ``value`` cannot be a path ("" when it can): empty, a name longer than the
    filesystem allows (which makes every later ``stat`` fail), ``~user`` of nobody."""
    if not value:
        return "is empty; write a path"
    raw = value.encode("utf-8", "surrogateescape")
    if len(raw) > _PATH_MAX:
        return f"is {len(raw)} bytes long; a path is at most {_PATH_MAX}"
    for part in raw.split(b"/"):
        if len(part) > _NAME_MAX:
            return (
                f"has a name of {len(part)} bytes ({shown(part[:24].decode(errors='replace'))}"
                f"…); a file or folder name is at most {_NAME_MAX}"
            )
    if value.startswith("~"):
        try:
            Path(value).expanduser()
        except RuntimeError:
            return f"{value!r} names the home folder of a user this machine does not have"
    return ""


def checked_path(value: str) -> str:
    """The pydantic rule of every path key (:data:`PathText`); raises ValueError."""
    if problem := path_problem(value):
        raise ValueError(f"{shown(value[:60])!r} {problem}" if value else problem)
    return value


def _bind_address(value: str) -> str:
    every = "0.0.0.0 or :: (every interface, if that is meant)"
    if value in ("0.0.0.0", "::"):  # every interface: only when written so
        return value
    if not value:
        raise ValueError(
            f"an empty host listens on every interface; write 127.0.0.1 (this machine), or {every}"
        )
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        address = None
    if address is not None and address.is_unspecified:
        raise ValueError(f"{value!r} listens on every interface; write {every}")
    labels = value.removesuffix(".").split(".")
    if address is None and (
        len(value) > 253
        or labels[-1].isdigit()  # "0", "127.1": numbers that resolve to an address
        or not all(_HOST_LABEL_RE.fullmatch(label) for label in labels)
    ):
        raise ValueError(
            f"{value!r} is neither an address nor a host name; write 127.0.0.1, or {every}"
        )
    return value


def _id_rule(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    """The pydantic rule of one kind of platform ID: ``what`` says what it must look like."""

    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return check


_slack_user = _id_rule(
    _SLACK_USER_RE,
    "a Slack user ID (U or W, then capitals and digits, such as U01ABCDEF: the profile's "
    '"Copy member ID", not a display name)',
)
_slack_channel = _id_rule(
    _SLACK_CHANNEL_RE,
    "a Slack channel ID (C or G, then capitals and digits, such as C0123456789: the "
    "channel's details show it, not its #name)",
)
_snowflake = _id_rule(
    _SNOWFLAKE_RE,
    "a Discord ID (17 to 20 digits, such as 112233445566778899: Developer Mode's Copy ID)",
)


def _snowflake_number(value: int) -> int:
    _snowflake(str(value))
    return value


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


ApiUrl = Annotated[str, AfterValidator(checked_url)]
"""A URL key: ``https://``, or ``http://`` to this machine. Every URL key is of this type."""
PathText = Annotated[str, AfterValidator(checked_path)]
"""A path key (on this machine or the server): not empty, no name longer than allowed."""
SlackUser = Annotated[str, AfterValidator(_slack_user)]
SlackChannel = Annotated[str, AfterValidator(_slack_channel)]
DiscordId = Annotated[str, AfterValidator(_snowflake)]
DiscordIdNumber = Annotated[int, AfterValidator(_snowflake_number)]
BindHost = Annotated[str, AfterValidator(_bind_address)]
Port = Annotated[int, Field(ge=1, le=65535)]


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


class Config:
    """A validated configuration, with paths resolved against the config file's folder."""

    def __init__(self, model: ConfigModel, base: Path, origin: str) -> None:
        self.model = model
        self.base = base
        self.origin = origin  # the file it came from, or "built-in default"
        self.profile: Profile = load_profile(model.profile, base)
        self._check_people()
        self._check_announcing()
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
    def trusted_root(self) -> str:
        """``[signatures] trusted_root``: a pinned root's name, or the file's path resolved."""
        root = self.model.signatures.trusted_root
        return root if root in ("production", "staging") else str(self.path(root))

    def signer(self, tag: ReleaseTag) -> tuple[str, str] | None:
        """Who signs ``tag``'s branch: ``[signatures] identities``, else the profile's."""
        return self.model.signatures.identities.get(tag.branch) or self.profile.signer(tag)

    def requires_signatures(self, tag: ReleaseTag) -> bool:
        """Whether ``tag``'s signed files need valid signatures (``[signatures] require``,
        else the profile)."""
        return signatures_required(self.model.signatures.require, self.profile, tag)

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

    def template_path(self, tag_values: Mapping[str, str]) -> Path | None:
        """The announcement's template file for a release (``{branch}``, ``{tag}`` and
        ``{version}`` in its name filled from ``tag_values``), or None for the built-in."""
        template = self.model.discourse.template if self.model.discourse else None
        if template is None:
            return None
        for name, value in tag_values.items():
            template = template.replace("{" + name + "}", value)
        return self.path(template)

    def _check_announcing(self) -> None:
        pydotorg, discourse = self.model.pydotorg, self.model.discourse
        if pydotorg.release_page and pydotorg.kind != "api":
            raise ConfigError(
                f'{self.origin}: pydotorg.release_page needs kind = "api": the page is made '
                "public once the files are registered."
            )
        template = discourse.template if discourse else None
        if template is None or "{" in template:
            return  # the built-in frame, or one file per branch: read when drafting
        path = self.path(template)
        try:
            check_template(path.read_text(encoding="utf-8"), f"discourse.template ({path})")
        except OSError as err:
            raise ConfigError(
                f"{self.origin}: discourse.template: cannot read {path} ({err.strerror})."
            ) from err
        except UnicodeDecodeError as err:
            raise ConfigError(f"{self.origin}: discourse.template: {not_utf8(err)}") from err
        except AnnouncementError as err:
            raise ConfigError(f"{self.origin}: {err}") from err

    def _check_people(self) -> None:
        roles = self.profile.roles
        for name, person in self.model.people.items():
            if problem := person_name_problem(name):
                raise ConfigError(f"{self.origin}: people: {problem}.")
            for role in person.roles:
                if role not in roles:
                    raise ConfigError(
                        f"{self.origin}: people.{name}.roles: {role!r} is not a role of the "
                        f"{self.profile.name} profile ({', '.join(roles)})."
                    )
        for platform in ("slack", "discord"):
            owners: dict[str, str] = {}
            for name, person in self.model.people.items():
                user = getattr(person, platform)
                if user is None:
                    continue
                if user in owners:  # else the first would silently win
                    raise ConfigError(
                        f"{self.origin}: people.{name}.{platform}: {user!r} is already "
                        f"people.{owners[user]}.{platform}; one ID is one person."
                    )
                owners[user] = name
        self._check_places()

    def _check_places(self) -> None:
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
        if storage.kind == "local":
            # The state's folder also holds its journal, lock and release-cycle copy.
            state = Path(os.path.realpath(self.state_path.parent))
            for key, folder in (("storage.staging", staging), ("storage.public", public)):
                if state.is_relative_to(folder):
                    raise ConfigError(
                        f"{self.origin}: state: {self.state_path} is inside {key} ({folder}), "
                        "where uploaders or the public could read or change the bot's "
                        "journal; put the state file outside both folders."
                    )

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


def person_name_problem(name: str) -> str:
    """Why ``name`` cannot be a person's name in the config ("" when it can)."""
    if not name.strip():
        return "a person's name is empty; write [people.NAME] with a name"
    if name.lower() == BOT_ACTOR:
        return (
            f"{name!r} is the name of the bot itself in the audit trail; call the person "
            "something else"
        )
    if any(char.isspace() for char in name):
        return f"{name!r} contains a space; a person's name is one word (typed after /as)"
    return ""


def load_config(path: Path | None = None, *, cwd: Path | None = None) -> Config:
    """Load ``path``; without one, ``./relbot.toml`` if present, else the built-in default.

    Raises :class:`ConfigError` with one sentence per problem, each naming its key.
    """
    cwd = cwd or Path.cwd()
    if path is None and os.path.lexists(cwd / DEFAULT_CONFIG_NAME):
        path = cwd / DEFAULT_CONFIG_NAME  # even a folder or a broken link: said, not skipped
    if path is None:
        return Config(ConfigModel.model_validate(DEFAULT_CONFIG), cwd, "built-in default")
    try:
        data = tomllib.loads(read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except UnreadableFile as err:
        fix = "" if err.why.startswith("cannot") else "; give the path of a TOML file"
        raise ConfigError(f"{path}: the config {err.why}{fix}.") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: {not_utf8(err)}") from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML ({err}).") from err
    except RecursionError as err:
        raise ConfigError(
            f"{path}: not a relbot config (its values are nested too deeply)."
        ) from err
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
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{origin}: {key}: {message}."


# The embedded local default: a demo team rehearsing on folders under ./relbot-data/.
DEFAULT_CONFIG: dict[str, Any] = {
    "profile": "cpython",
    "state": "relbot-data/state.db",
    "storage": {
        "kind": "local",
        "staging": "relbot-data/staging",
        "public": "relbot-data/public",
    },
    # The rehearsal runs offline with stand-in files, so it cannot sign with Sigstore: it
    # opts out in the open, and its summary and plan say "signatures not required".
    "signatures": {"require": False},
    "people": {
        "hugo": {"rm": ["3.14", "3.15"], "roles": ["source", "docs"]},
        "steve": {"roles": ["windows"]},
        "ned": {"roles": ["macos"]},
    },
}
