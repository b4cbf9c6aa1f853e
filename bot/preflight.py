"""What ``relbot check`` can tell without the network: every problem of the config at once,
each a sentence naming the key and the fix.

``relbot check --offline`` (systemd's ``ExecStartPre``) stops here, so an outage of
python.org or Slack never keeps the bot from starting. It writes nothing that stays: the
state file is read with SQLite's read-only mode, and every place the bot writes on this
machine (the state file's folder; with local storage staging, public and the work folder) is
proven writable by a probe, an empty hidden ``.relbot-….tmp`` file (a name scans skip)
created and removed at once. A probe, not ``access(2)``: only a real write meets every rule
that can refuse one (a read-only mount such as systemd's ``ProtectSystem``, a security
module's policy, an NFS server's own checks); it leaves nothing behind but the folder's
modification time. Without ``--offline``, the services
are reached too, but only those whose offline checks passed: a missing key file is reported
once, not again as a failed connection. ``relbot run`` makes the same checks before it
starts (and before it creates anything), so it never starts on what ``check`` refuses.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import posixpath
import pwd
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config import Config
from bot.config.sections import (
    ConfigModel,
    DiscordConfig,
    DiscourseConfig,
    PydotorgConfig,
    SlackConfig,
)
from bot.errors import ConfigError, RelbotError
from bot.journal.store import state_problems
from bot.storage.primitives import default_work, temp_name

# Where an operator puts a secret, for the fix of a missing one.
_EXPORT = "export it (systemd: EnvironmentFile=; Docker: --env-file)"


@dataclass
class Preflight:
    """The problems found offline, and which services are fit to be reached."""

    problems: list[str] = field(default_factory=list)
    blocked: set[str] = field(default_factory=set)  # "storage", "pydotorg", "slack", ...
    services: list[str] = field(default_factory=list)  # the service of each problem

    def add(self, service: str, problem: str) -> None:
        self.problems.append(problem)
        self.services.append(service)
        self.blocked.add(service)

    def problems_except(self, services: set[str]) -> list[str]:
        """The problems of every service but ``services`` (platforms a run leaves off)."""
        return [p for p, s in zip(self.problems, self.services, strict=True) if s not in services]


NOBODY = "people: the config names nobody; add a [people.NAME] table."


def offline_problems(config: Config) -> Preflight:
    """Check everything the config names that is on this machine: the team, folders, the
    state file, key files, trusted root, and the environment variables holding the secrets.
    ``relbot check`` (with or without ``--offline``) and ``relbot run`` all call this."""
    found = Preflight()
    if not config.people:  # what `relbot run` refuses, `relbot check` reports
        found.add("people", NOBODY)
    else:
        _release_managers(config, found)
    for problem in state_problems(config.state_path):
        found.add("state", problem)
    _places_apart(config, found)
    _writable(config, found)
    _storage(config, found)
    _signatures(config, found)
    _secrets(config.model, found)
    _health_host(config, found)
    return found


def _release_managers(config: Config, found: Preflight) -> None:
    """A team where nobody is RM can never publish: said now, not at the first /publish."""
    if not any(person.rm for person in config.people.values()):
        found.add(
            "people",
            "people: nobody is a release manager, so no release can ever be published; give "
            'the RM of each branch rm = ["3.14"] (the branches) in their [people.NAME] table.',
        )


def _work_folder(config: Config) -> str:
    """Where the bot keeps its own copies: ``[storage] work``, else beside public."""
    settings = config.model.storage
    if settings.work is not None:
        return str(config.path(settings.work)) if settings.kind == "local" else settings.work
    if settings.kind == "local":
        return default_work(os.path.realpath(config.path(settings.public)))
    return default_work(settings.public)


def _places_apart(config: Config, found: Preflight) -> None:
    """The bot's work folder out of the folders uploaders write and the web server serves
    (the default one, beside public, included): inside public, the bot's copies would be
    served to the world before they are published; inside staging, an uploader could change
    them. (The config refuses the plain cases, as written; this is where the folders really
    are, links followed.)"""
    settings = config.model.storage
    local = settings.kind == "local"

    def real(path: str) -> str:
        return os.path.realpath(path) if local else posixpath.normpath(path)

    work = real(_work_folder(config))
    for name in ("public", "staging"):
        value = getattr(settings, name)
        folder = real(str(config.path(value)) if local else value)
        if work == folder or work.startswith(folder.rstrip("/") + "/"):
            beside = default_work(
                real(str(config.path(settings.public)) if local else settings.public)
            )
            what = "the web server serves it" if name == "public" else "uploaders write"
            found.add(
                "storage",
                f"storage.work: the bot's work folder {work} is inside {name} ({folder}), "
                f"where {what}; set [storage] work to a folder beside it (the default: "
                f"{beside}).",
            )
            return


def _writable(config: Config, found: Preflight) -> None:
    """Prove that every place the bot writes on this machine can be written from where it
    runs (a probe created and removed at once, see the module), naming the folder and the
    fix: under systemd, the unit's ``ReadWritePaths=`` line."""
    settings = config.model.storage
    places: list[tuple[str, str, Path]] = [("state", "state", config.state_path.parent)]
    if settings.kind == "local":
        places += [
            ("storage", f"storage.{name}", config.path(getattr(settings, name)))
            for name in ("staging", "public")
        ]
        places.append(("storage", "storage.work", Path(_work_folder(config))))
    # The bot makes the state's folder and its work folder, and the demo its own folders;
    # a config's missing staging or public is an error of its own (see _storage).
    made = config.origin == "built-in default"
    for service, key, folder in places:
        if service in found.blocked or (key in _NOT_MADE and not made and not folder.exists()):
            continue
        beside = config.state_path if service == "state" else None  # -wal, -shm, .lock
        if (problem := _probe(folder, beside)) is not None:
            found.add(service, f"{key}: {problem}")


_NOT_MADE = ("storage.staging", "storage.public")


def _probe(folder: Path, beside: Path | None = None) -> str | None:
    """Why the bot cannot write in ``folder`` (or, when it is missing, make it in the
    nearest folder that exists), or None when a probe file could be made and removed.
    ``beside``: the file the bot writes there, named in the sentence."""
    where = folder
    while not where.exists() and where.parent != where:
        where = where.parent  # the bot makes what is missing (the demo, the work folder)
    if not where.is_dir():
        return None  # not a folder: said by the checks of the path itself
    probe = where / temp_name()
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as err:
        made = "" if where == folder else f" (to make {folder})"
        if beside is not None:
            made = f" (for {beside})"
        user = _user()
        if err.errno != errno.EROFS:
            fix = f"{err.strerror}; give the user {user} write access to it"
        elif where == folder:
            fix = (
                "it is read-only here; under systemd, add it to the unit's ReadWritePaths= "
                f"line (ReadWritePaths=-{folder}), then systemctl daemon-reload"
            )
        else:  # a path systemd finds missing is skipped: the folder must be there first
            fix = (
                f"it is read-only here; create it (install -d -m 0700 -o {user} {folder}) "
                f"and, under systemd, add it to the unit's ReadWritePaths= line "
                f"(ReadWritePaths=-{folder}), then systemctl daemon-reload"
            )
        return f"cannot write in {where}{made}: {fix}."
    probe.unlink()
    return None


def _user() -> str:
    """The name of the account relbot runs as (its uid when it has no name)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _health_host(config: Config, found: Preflight) -> None:
    """``[health] host`` must be an address of this machine: a name (``example.com``) is
    resolved when the bot starts and fails it there, after ``check`` passed."""
    health = config.model.health
    if health is None:
        return
    host, every = health.host, "127.0.0.1 (this machine only), or 0.0.0.0 (every interface)"
    if host == "localhost":
        return
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        found.add("health", f"health.host: {host!r} is not an address; write {every}.")
        return
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, 0))  # port 0: any free one, released at once; nothing is sent
        except OSError as err:
            if err.errno == errno.EADDRNOTAVAIL:
                found.add(
                    "health",
                    f"health.host: {host} is not an address of this machine; write {every}.",
                )


def _storage(config: Config, found: Preflight) -> None:
    settings = config.model.storage
    if settings.kind == "local":
        demo_to_make = False
        for name in ("staging", "public"):
            folder = config.path(getattr(settings, name))
            if config.origin == "built-in default" and not folder.exists():
                demo_to_make = True  # the rehearsal makes its own: `relbot run` will
                continue
            if not folder.exists():
                found.add(
                    "storage",
                    f"storage.{name}: {folder} does not exist; create it "
                    f"(mkdir -p {folder}) or fix the path.",
                )
            elif not folder.is_dir():
                found.add("storage", f"storage.{name}: {folder} is not a folder; fix the path.")
        if "storage" not in found.blocked and not demo_to_make:
            # Both are folders: what the backend itself checks.
            from bot.app import build_storage

            try:
                for problem in build_storage(config).check():
                    found.add("storage", problem)
            except RelbotError as err:
                found.add("storage", str(err))
        return
    assert settings.key_file and settings.known_hosts  # required for sftp by the config
    host = f"{settings.host}" + (f" -p {settings.port}" if settings.port != 22 else "")
    key_file = config.path(settings.key_file)
    readable = {
        "key_file": (
            key_file,
            f"create a key (ssh-keygen -t ed25519 -f {key_file}) and add its .pub to "
            f"~{settings.user}/.ssh/authorized_keys on {settings.host}",
        ),
        "known_hosts": (
            config.path(settings.known_hosts),
            f"add the server's key with ssh-keyscan {host} and check its fingerprint",
        ),
    }
    for key, (path, fix) in readable.items():
        problem = _unreadable(path)
        if problem:
            found.add("storage", f"storage.{key}: {path} {problem}; {fix}.")
    if settings.passphrase_env:
        _need_env(found, "storage", "storage.passphrase_env", settings.passphrase_env)


def _signatures(config: Config, found: Preflight) -> None:
    from bot.app import build_verifier  # sigstore is heavy: loaded when checked

    try:
        build_verifier(config)
    except ConfigError as err:
        found.add("signatures", str(err))


def _secrets(model: ConfigModel, found: Preflight) -> None:
    if model.pydotorg.kind == "api":
        _need_env(found, "pydotorg", "pydotorg.auth_env", model.pydotorg.auth_env)
    if model.slack is not None:
        _need_env(found, "slack", "slack.bot_token_env", model.slack.bot_token_env)
        if model.slack.mode == "socket":
            _need_env(found, "slack", "slack.app_token_env", model.slack.app_token_env)
            _slack_tokens_in_place(model.slack, found)
        else:
            _need_env(found, "slack", "slack.signing_secret_env", model.slack.signing_secret_env)
    if model.discord is not None:
        _need_env(found, "discord", "discord.token_env", model.discord.token_env)
    if model.pydotorg.release_page:
        _need_env(found, "release_page", "pydotorg.token_env", model.pydotorg.token_env)
    if model.discourse is not None:
        _need_env(found, "discourse", "discourse.api_key_env", model.discourse.api_key_env)


def _slack_tokens_in_place(slack: SlackConfig, found: Preflight) -> None:
    """Slack's bot token starts ``xoxb-`` and its app-level token ``xapp-``: one in the
    other's variable fails at the first connection with a message that does not say so."""
    kinds = (
        ("slack.bot_token_env", slack.bot_token_env, "xapp-", "an app-level", "the bot"),
        ("slack.app_token_env", slack.app_token_env, "xoxb-", "a bot", "the app-level"),
    )
    for key, name, wrong, held, wanted in kinds:
        if os.environ.get(name, "").startswith(wrong):
            found.add(
                "slack",
                f"{key}: {name} holds {held} token ({wrong}…) where {wanted} token belongs; "
                f"are {slack.bot_token_env} and {slack.app_token_env} swapped?",
            )


def unloadable_secrets(data: Mapping[str, object]) -> list[str]:
    """For a config that does not load (``relbot check`` lists every problem in one round):
    the secrets its tables name, checked as :func:`offline_problems` would, each table
    taken with its defaults and those of its keys that have the right type."""
    sections: dict[str, type[PydotorgConfig | SlackConfig | DiscordConfig | DiscourseConfig]]
    sections = {
        "pydotorg": PydotorgConfig,
        "slack": SlackConfig,
        "discord": DiscordConfig,
        "discourse": DiscourseConfig,
    }
    parts: dict[str, Any] = {}
    for name, section in sections.items():
        table = data.get(name)
        if not isinstance(table, dict):
            continue
        fields = section.model_fields
        parts[name] = section.model_construct(
            **{
                key: value
                for key, value in table.items()
                if key in fields and isinstance(value, type(fields[key].default))
            }
        )
    found = Preflight()
    _secrets(ConfigModel.model_construct(**parts), found)
    return found.problems


def _need_env(found: Preflight, service: str, key: str, name: str) -> None:
    if not os.environ.get(name):
        found.add(service, f"{key}: the environment variable {name} is not set; {_EXPORT}.")


def _unreadable(path: Path) -> str:
    """Why ``path`` cannot be read as a file, or "" when it can."""
    if not path.exists():
        return "does not exist"
    if not path.is_file():
        return "is not a file"
    if not os.access(path, os.R_OK):
        return "is not readable by this user"
    return ""
