"""What ``relbot check`` can tell without the network: every problem of the config at once,
each a sentence naming the key and the fix.

``relbot check --offline`` (systemd's ``ExecStartPre``) stops here, so an outage of
python.org or Slack never keeps the bot from starting. Without ``--offline``, the services
are reached too, but only those whose offline checks passed: a missing key file is reported
once, not again as a failed connection. ``relbot run`` makes the same checks before it
starts (and before it creates anything), so it never starts on what ``check`` refuses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bot.config import Config
from bot.errors import ConfigError, RelbotError
from bot.journal.store import state_problems

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
    for problem in state_problems(config.state_path):
        found.add("state", problem)
    _storage(config, found)
    _signatures(config, found)
    _secrets(config, found)
    return found


def _storage(config: Config, found: Preflight) -> None:
    settings = config.model.storage
    if settings.kind == "local":
        for name in ("staging", "public"):
            folder = config.path(getattr(settings, name))
            if config.origin == "built-in default":  # the rehearsal makes its own folders
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                except OSError as err:
                    found.add(
                        "storage", f"storage.{name}: cannot create {folder} ({err.strerror})."
                    )
                    continue
            if not folder.exists():
                found.add(
                    "storage",
                    f"storage.{name}: {folder} does not exist; create it "
                    f"(mkdir -p {folder}) or fix the path.",
                )
            elif not folder.is_dir():
                found.add("storage", f"storage.{name}: {folder} is not a folder; fix the path.")
        if "storage" not in found.blocked:  # both are folders: what the backend itself checks
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


def _secrets(config: Config, found: Preflight) -> None:
    model = config.model
    if model.pydotorg.kind == "api":
        _need_env(found, "pydotorg", "pydotorg.auth_env", model.pydotorg.auth_env)
    if model.slack is not None:
        _need_env(found, "slack", "slack.bot_token_env", model.slack.bot_token_env)
        if model.slack.mode == "socket":
            _need_env(found, "slack", "slack.app_token_env", model.slack.app_token_env)
        else:
            _need_env(found, "slack", "slack.signing_secret_env", model.slack.signing_secret_env)
    if model.discord is not None:
        _need_env(found, "discord", "discord.token_env", model.discord.token_env)
    if model.pydotorg.release_page:
        _need_env(found, "release_page", "pydotorg.token_env", model.pydotorg.token_env)
    if model.discourse is not None:
        _need_env(found, "discourse", "discourse.api_key_env", model.discourse.api_key_env)


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
