"""The ``relbot`` command line: run, manifest, status, audit, sign, check."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot import __version__
from bot.app import (
    FIXED_CODE_ENV,
    build_gate,
    build_platform,
    build_registry,
    build_storage,
)
from bot.config import Config, load_config
from bot.domain.signing import opt_out_warning
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError, StagingUnreachable
from bot.logs import setup_logging
from bot.messages import ChannelMessage
from bot.render import audit_line
from bot.serving import refresh_release_cycle, run_console, run_platforms
from bot.state import OwnerLock, StateStore, state_problems
from bot.storage.lock import Holder, LateLease, StorageLease

if TYPE_CHECKING:
    pass

log = logging.getLogger("relbot")
CONFIG_ENV = "RELBOT_CONFIG"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.log_level, args.log_format)
    try:
        config = load_config(args.config or _config_from_env())
        result: int = args.func(config, args)
        return result
    except RelbotError as err:
        print(f"relbot: {err}", file=sys.stderr)
        return 1


def _config_from_env() -> Path | None:
    """``RELBOT_CONFIG`` names the config file when ``--config`` does not (containers,
    systemd); then ``./relbot.toml``, then the built-in default."""
    value = os.environ.get(CONFIG_ENV, "")
    return Path(value) if value else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relbot", description="Stage release files; publish them all at once."
    )
    parser.add_argument("--version", action="version", version=f"relbot {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config", type=Path, help="config file (default: $RELBOT_CONFIG, else ./relbot.toml)"
    )
    common.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )
    common.add_argument("--log-format", default="text", choices=["text", "json"])
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    run = sub.add_parser("run", parents=[common], help="run the bot")
    run.add_argument(
        "--platform", action="append", default=[], metavar="NAME", help="console, slack, discord"
    )
    run.add_argument("--as", dest="speaker", metavar="PERSON", help="console: who is typing")
    run.set_defaults(func=_run)

    manifest = sub.add_parser("manifest", parents=[common], help="the expected files of TAG")
    manifest.add_argument("tag")
    manifest.set_defaults(func=_manifest)

    status = sub.add_parser("status", parents=[common], help="readiness of TAG or every release")
    status.add_argument("tag", nargs="?")
    status.set_defaults(func=_status)

    audit = sub.add_parser("audit", parents=[common], help="the audit trail of TAG")
    audit.add_argument("tag")
    audit.set_defaults(func=_audit)

    sign = sub.add_parser("sign", parents=[common], help="sign TAG's staged files (Sigstore)")
    sign.add_argument("tag")
    sign.add_argument(
        "--oob",
        action="store_true",
        default=None,
        help="log in by pasting a code in this terminal (default in an SSH session "
        "without a display); SIGSTORE_IDENTITY_TOKEN skips the login",
    )
    sign.set_defaults(func=_sign)

    check = sub.add_parser("check", parents=[common], help="validate config, reach services")
    check.add_argument(
        "--offline", action="store_true", help="the config only: reach no service (ExecStartPre)"
    )
    check.set_defaults(func=_check)

    health = sub.add_parser(
        "health", parents=[common], help="exit 0 if the running bot's /healthz answers 200"
    )
    health.set_defaults(func=_probe_health)
    return parser


def _run(config: Config, args: argparse.Namespace) -> int:
    if not config.people:
        raise RelbotError(_NOBODY)
    platforms = args.platform or config.platforms() or ["console"]
    for name in platforms:
        if name not in ("console", "slack", "discord"):
            raise RelbotError(f"--platform: unknown platform {name!r} (console, slack, discord).")
        if name != "console" and name not in config.platforms():
            raise RelbotError(f"--platform {name}: the config has no [{name}] table.")
    if "console" in platforms and platforms != ["console"]:
        raise RelbotError("--platform console runs alone; chat platforms run together.")
    if platforms != ["console"] and os.environ.get(FIXED_CODE_ENV):
        raise RelbotError(
            f"{FIXED_CODE_ENV} is for console rehearsals only; unset it to run "
            f"{', '.join(platforms)}."
        )
    lock = OwnerLock(config.state_path)
    lock.acquire()
    try:
        # Two bots with different state files on one download server would both publish.
        holder = Holder.this_process(config.state_path, config.model.poll_interval)
        lease = _storage_lease(config, holder)
        try:
            if platforms == ["console"]:
                return asyncio.run(run_console(config, args.speaker, lease))
            return asyncio.run(run_platforms(config, platforms, lease))
        finally:
            lease.release()
    finally:
        lock.release()


def _storage_lease(config: Config, holder: Holder) -> StorageLease:
    """The storage lock: refused at once when another bot holds it; taken later when the
    storage cannot be reached now (the bot then starts, and publishes nothing until then)."""
    storage = build_storage(config)
    try:
        return storage.lock(holder)
    except StagingUnreachable as err:
        log.warning("storage lock not taken yet, the storage is unreachable: %s", err)
        return LateLease(functools.partial(storage.lock, holder))


def _manifest(config: Config, args: argparse.Namespace) -> int:
    tag = ReleaseTag.parse(args.tag)
    for expected in config.profile.expected(tag):
        print(f"{expected.role}\t{expected.path}")
    return 0


class _Silent:
    """A channel nobody reads: ``relbot status`` only wants the reply."""

    async def post(self, message: ChannelMessage) -> str:
        return ""

    async def update(self, ref: str, message: ChannelMessage) -> None:
        return None


def _status(config: Config, args: argparse.Namespace) -> int:
    gate = build_gate(config, _Silent(), connect=False)
    line = f"/status {args.tag}" if args.tag else "/status"
    reply = asyncio.run(gate.handle("cli", "status", line))
    print(reply.text)
    return 1 if reply.private else 0


def _audit(config: Config, args: argparse.Namespace) -> int:
    tag = ReleaseTag.parse(args.tag)
    if not config.state_path.exists():
        print(
            f"relbot: no state file at {config.state_path}; nothing recorded yet.", file=sys.stderr
        )
        return 1
    store = StateStore(config.state_path)
    for event in store.events(tag):
        print(audit_line(event))
    return 0


def _sign(config: Config, args: argparse.Namespace) -> int:
    """Sign what ``tag`` still lacks, with one login; exit 1 if anything stays unsigned."""
    from bot.signing import run_sign  # sigstore is heavy: loaded when used

    outcome = run_sign(config, ReleaseTag.parse(args.tag), oob=args.oob)
    print(outcome.report())
    return 0 if outcome.ok else 1


def _check(config: Config, args: argparse.Namespace) -> int:
    """Every problem at once, each with its fix: one failing service does not hide the next.
    The config first, offline; then (without ``--offline``) every service it names whose
    offline checks passed. Local storage and the state file are on this machine: checked in
    both modes."""
    from bot.preflight import offline_problems

    found = offline_problems(config)
    problems = list(found.problems)
    if not config.people:  # what `relbot run` refuses, `relbot check` reports
        problems.append(_NOBODY)
    checks: list[Callable[[], list[str]]] = [functools.partial(state_problems, config.state_path)]
    local = config.model.storage.kind == "local"
    if "storage" not in found.blocked and (local or not args.offline):
        checks.append(lambda: build_storage(config).check())
    if not args.offline:
        if "pydotorg" not in found.blocked:
            checks.append(functools.partial(_registry_problems, config))
        checks += [
            functools.partial(_platform_problems, config, name)
            for name in config.platforms()
            if name not in found.blocked
        ]
    for check in checks:
        try:
            problems += check()
        except RelbotError as err:
            problems.append(str(err))
    if not args.offline and (problem := refresh_release_cycle(config)) is not None:
        problems.append(problem)
    copy = config.release_cycle
    print(f"relbot check: release cycle from {copy.describe(time.time())}.")
    if (warning := opt_out_warning(config.model.signatures.require, config.profile)) is not None:
        print(f"relbot check: warning: {warning}")  # an explicit choice: not a problem
    if problems:
        print("\n".join(f"relbot check: {p}" for p in problems), file=sys.stderr)
        return 1
    if args.offline:
        print(f"relbot check: {config.origin} is valid (offline: services were not reached).")
    else:
        print(f"relbot check: {config.origin} is valid and every configured service answers.")
    return 0


_NOBODY = "people: the config names nobody; add a [people.NAME] table."


def _probe_health(config: Config, args: argparse.Namespace) -> int:
    """The container's HEALTHCHECK: ask the running bot on the configured host and port."""
    from bot.healthcheck import probe

    healthy, line = probe(config)
    print(f"relbot health: {line}", file=sys.stdout if healthy else sys.stderr)
    return 0 if healthy else 1


def _registry_problems(config: Config) -> list[str]:
    registry = build_registry(config)
    return registry.check() if registry is not None else []


def _platform_problems(config: Config, name: str) -> list[str]:
    return build_platform(config, name).check()
