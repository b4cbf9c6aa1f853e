"""The configuration file (TOML), validated strictly: unknown keys and wrong types are errors
that name the key. Secrets are never in the file, only the names of environment variables.

The package: the loader and :class:`Config` here, the rule for each kind of value
(``values``), the tables (``sections``) and the release cycle read without the network
(``cycle_copy``). It sits just above the domain: it may import the basics and
:mod:`bot.domain`, nothing above them."""

from __future__ import annotations

import os
import posixpath
import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from bot.config.cycle_copy import CACHE_NAME, CycleCopy, local_copy
from bot.config.sections import ConfigModel, PersonConfig
from bot.domain.announcement import AnnouncementError, check_template
from bot.domain.folders import folders_overlap, overlap_message
from bot.domain.profile import Profile, load_profile
from bot.domain.signing import signatures_required
from bot.domain.tags import ReleaseTag
from bot.domain.text import not_utf8
from bot.errors import ConfigError
from bot.regular_files import UnreadableFile, read_regular_file

DEFAULT_CONFIG_NAME = "relbot.toml"
MAX_CONFIG_BYTES = 1 << 20  # a real config is a few kB
BOT_ACTOR = "relbot"  # bot.service.pipeline.steps.BOT: the actor of the bot's own events


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
