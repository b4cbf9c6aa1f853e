"""The ``relbot`` command line: run, demo, rehearse, manifest, status, audit, sign, check,
health, wait.

Over 400 lines because it is the whole command line in one place: each subcommand's
arguments beside the few lines that run it (the work itself is in the packages)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import signal
import sys
import time
import tomllib
import urllib.parse
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
    run_sign,
    slack_manifest,
)
from bot.config import DEFAULT_CONFIG_NAME, MAX_CONFIG_BYTES, Config, load_config
from bot.demo import BUILT_IN, DEMO_TAG, demo_state, make_demo_folders, reset_demo
from bot.domain.signing import opt_out_warning
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RelbotError, StagingUnreachable, StateFileError
from bot.journal.store import OwnerLock, StateStore, lost_state
from bot.logs import setup_logging
from bot.ports.lease import Holder, StorageLease
from bot.ports.messages import ChannelMessage
from bot.regular_files import UnreadableFile, read_regular_file
from bot.service.render import audit_line
from bot.serving import board_port, refresh_release_cycle, run_console, run_platforms
from bot.storage.lock import LateLease
from bot.storage.overlap import lock_unless_overlapping, refuse_overlap_on_server

if TYPE_CHECKING:
    pass

log = logging.getLogger("relbot")
CONFIG_ENV = "RELBOT_CONFIG"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.log_level, args.log_format)
    try:
        if args.func is _rehearse:  # a config of its own, written in its own folder
            rehearsed: int = _rehearse(args)
            return rehearsed
        try:
            config = load_config(args.config or _config_from_env())
        except ConfigError as err:
            if args.func is not _check:
                raise
            return _check_unloadable(args.config or _config_from_env(), err)
        result: int = args.func(config, args)
        sys.stdout.flush()  # here, where a closed pipe can be caught, not at exit
        return result
    except RelbotError as err:
        print(f"relbot: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line, not the traceback of whatever ran
        after = (
            " Whatever was under way resumes at the next relbot run." if args.func is _run else ""
        )
        print(f"\nrelbot: interrupted.{after}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """The reader of stdout went away (``relbot wait … | head``): end quietly, as other
    tools do, with the status of a process ended by SIGPIPE. stdout goes to /dev/null so
    that the interpreter's own flush at exit does not fail again."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
    return 128 + signal.SIGPIPE


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

    run = sub.add_parser(
        "run",
        parents=[common],
        help="run the bot",
        description="Run the bot on the platforms of the config.",
        epilog=RUN_EPILOG,
    )
    run.add_argument(
        "--platform", action="append", default=[], metavar="NAME", help="console, slack, discord"
    )
    run.add_argument("--as", dest="speaker", metavar="PERSON", help="console: who is typing")
    run.add_argument(
        "--board",
        type=_port,
        metavar="PORT",
        help="serve the release board (and /healthz, /metrics) on this port; 0: a free one "
        "(the built-in default's choice)",
    )
    run.set_defaults(func=_run)

    demo = sub.add_parser(
        "demo",
        parents=[common],
        help="the built-in demo: where it is; --reset starts the rehearsal again",
    )
    demo.add_argument(
        "--reset",
        action="store_true",
        help="delete the demo's folders and state, so that the next relbot run stages 3.14.1 again",
    )
    demo.set_defaults(func=_demo)

    rehearse = sub.add_parser(
        "rehearse",
        help="release day on this machine: signatures, python.org, Discourse (from a clone)",
        description="Start the outside world on 127.0.0.1 (a private Sigstore instance, "
        "python.org, Discourse, the download site) in a fresh folder under this one, stage "
        "3.14.1 with signatures required, and run the bot on the console until end of input.",
    )
    rehearse.add_argument(
        "--platform",
        default="console",
        choices=["console", "slack", "discord"],
        help="console (slack and discord are not rehearsed yet)",
    )
    rehearse.add_argument(
        "--board", type=_port, default=0, metavar="PORT", help="the release board's port (0: free)"
    )
    rehearse.set_defaults(func=_rehearse, log_level="warning", log_format="text")

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
    health.add_argument(
        "--board",
        metavar="URL",
        help="ask the bot serving this board (http://HOST:PORT/, as relbot run prints it: "
        "the demo's) instead of the config's [health] port",
    )
    health.set_defaults(func=_probe_health)

    wait = sub.add_parser(
        "wait",
        parents=[common],
        help="block until TAG (every TAG named) is ready, publishable or published",
    )
    wait.add_argument("tag", nargs="+", metavar="TAG")
    wait.add_argument("--until", required=True, choices=["ready", "publishable", "published"])
    wait.add_argument(
        "--timeout", type=_seconds, metavar="S", help="give up after S seconds (exit 3)"
    )
    wait.add_argument(
        "--board",
        metavar="URL",
        help="ask the running bot's board (http://HOST:PORT) instead of reading the state file",
    )
    wait.add_argument(
        "--interval",
        type=functools.partial(_seconds, least=0.05),
        default=2.0,
        metavar="S",
        help="seconds between looks (2)",
    )
    wait.add_argument(
        "--progress",
        action="store_true",
        help="say on stderr what it waits for whenever that changes (default on a terminal)",
    )
    wait.set_defaults(func=_wait)

    slack = sub.add_parser(
        "slack-manifest", parents=[common], help="the Slack app manifest for the config"
    )
    slack.add_argument(
        "--url", help="HTTP mode: where Slack sends commands (https://HOST/slack/events)"
    )
    slack.set_defaults(func=_slack_manifest)
    return parser


RUN_EPILOG = (
    "Without --config, $RELBOT_CONFIG or ./relbot.toml, relbot runs the built-in default, a "
    "rehearsal: the console platform speaking as hugo (RM of 3.14; steve and ned hold the "
    "other roles), state and folders in ./relbot-data/, a demo release 3.14.1 staged on first "
    "start, and the release board on 127.0.0.1 at a free port (its URL is printed at start). "
    "relbot demo --reset starts the rehearsal again."
)


def _port(text: str) -> int:
    """``--board PORT``: 0 (a free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 for a free one, to 65535)")
    return port


def _run(config: Config, args: argparse.Namespace) -> int:
    from bot.preflight import offline_problems

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
    if config.origin == BUILT_IN:
        make_demo_folders(config)  # the rehearsal's own folders, before they are checked
    # What `relbot check --offline` refuses, `relbot run` refuses, before it creates anything.
    # (A chat platform left off with --platform needs none of its secrets.)
    problems = offline_problems(config).problems_except({"slack", "discord"} - set(platforms))
    if problems:
        print("\n".join(f"relbot: {p}" for p in problems), file=sys.stderr)
        return 1
    board = board_port(config, args.board)
    lock = OwnerLock(config.state_path)
    lock.acquire()
    try:
        # Two bots with different state files on one download server would both publish.
        holder = Holder.this_process(config.state_path, config.model.poll_interval)
        lease = _storage_lease(config, holder)
        try:
            if platforms == ["console"]:
                return asyncio.run(run_console(config, args.speaker, lease, board))
            return asyncio.run(run_platforms(config, platforms, lease, board))
        finally:
            lease.release()
    finally:
        lock.release()


def _storage_lease(config: Config, holder: Holder) -> StorageLease:
    """The storage lock: refused at once when another bot holds it; taken later when the
    storage cannot be reached now (the bot then starts, and publishes nothing until then)."""
    storage = build_storage(config)
    try:
        refuse_overlap_on_server(storage)  # a link on the server can make them one folder
        return storage.lock(holder)
    except StagingUnreachable as err:
        log.warning("storage lock not taken yet, the storage is unreachable: %s", err)
        return LateLease(functools.partial(lock_unless_overlapping, storage, holder))


def _rehearse(args: argparse.Namespace) -> int:
    """``relbot rehearse``: start the world, run the console bot in it until end of input,
    stop the world, then say what it saw and the audit. Raises :class:`RelbotError` when
    this relbot is not a clone's (the world is the clone's test doubles)."""
    if args.platform != "console":
        raise RelbotError(
            f"relbot rehearse --platform {args.platform} is not available yet: only the "
            "console is rehearsed (relbot rehearse, or --platform console)."
        )
    clone = Path(__file__).resolve().parent.parent
    if not (clone / "tests" / "rehearsal.py").is_file():
        raise RelbotError(
            "relbot rehearse runs from a clone of relbot (it starts the test doubles of its "
            "tests/ folder, which an installed relbot lacks): git clone it, make install, and "
            "run .venv/bin/relbot rehearse there."
        )
    sys.path.insert(0, str(clone))  # its tests/ package: the world and the doubles
    try:
        from tests.rehearsal import outcome, started
    except ImportError as err:  # the test extras (pyjwt, rfc8785) are not installed
        raise RelbotError(
            f"relbot rehearse needs the test dependencies ({err.name} is missing): run make "
            "install in the clone."
        ) from err

    with started(Path.cwd()) as world:
        print(
            f"relbot rehearse: the rehearsal's folder is {world.folder}; the outside world "
            "runs on 127.0.0.1:\n" + "\n".join(f"  {line}" for line in world.services()),
            file=sys.stderr,
            flush=True,
        )
        config = load_config(world.config)
        run = argparse.Namespace(platform=["console"], speaker=None, board=args.board)
        status = _run(config, run)
        lines = outcome(world)
    print("\nThe rehearsal is over; the outside world saw:\n" + "\n".join(lines))
    print(f"Audit of {DEMO_TAG}:")
    _audit(config, argparse.Namespace(tag=str(DEMO_TAG)))
    print(
        f"Read it again with: relbot audit {DEMO_TAG} --config {world.config} "
        "(the services are stopped)."
    )
    return status


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
    if reply.private:  # a refusal is an error, said where errors go
        print(f"relbot: {reply.text}", file=sys.stderr)
        return 1
    print(reply.text)
    return 0


def _demo(config: Config, args: argparse.Namespace) -> int:
    """Say where the built-in demo keeps its data; ``--reset`` deletes it (refused while a
    bot runs on it, and for any config but the built-in default)."""
    if config.origin != BUILT_IN:
        raise RelbotError(
            f"relbot demo is about the built-in default; {config.origin} is in use, and its "
            "data is not the demo's (run relbot demo in a folder without relbot.toml)."
        )
    if args.reset:
        removed = reset_demo(config)
        gone = ", ".join(str(path) for path in removed) or "nothing was there"
        print(
            f"relbot demo: reset ({gone}). The next relbot run (or make run) stages the demo "
            f"release {DEMO_TAG} again."
        )
        return 0
    print(f"relbot demo: {demo_state(config)}")
    return 0


def _audit(config: Config, args: argparse.Namespace) -> int:
    tag = ReleaseTag.parse(args.tag)
    if (lost := lost_state(config.state_path)) is not None:  # not "nothing recorded"
        raise StateFileError(lost)
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
    outcome = run_sign(config, ReleaseTag.parse(args.tag), oob=args.oob)
    print(outcome.report())
    return 0 if outcome.ok else 1


def _check(config: Config, args: argparse.Namespace) -> int:
    """Every problem at once, each with its fix: one failing service does not hide the next.
    The config first, offline; then (without ``--offline``) every service it names whose
    offline checks passed. Local storage and the state file are on this machine: checked in
    both modes."""
    from bot.preflight import offline_problems

    _quiet_sdks(args.log_level)
    found = offline_problems(config)  # the state file and local storage included
    problems = list(found.problems)
    checks: list[Callable[[], list[str]]] = []
    if not args.offline:
        if "storage" not in found.blocked and config.model.storage.kind != "local":
            checks.append(lambda: build_storage(config).check())
        if "pydotorg" not in found.blocked:
            checks.append(functools.partial(_registry_problems, config))
        checks += [
            functools.partial(_platform_problems, config, name)
            for name in config.platforms()
            if name not in found.blocked
        ]
        checks += [
            functools.partial(_announcing_problems, config, name)
            for name in ("downloads", "release_page", "discourse")
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


def _check_unloadable(path: Path | None, err: ConfigError) -> int:
    """``relbot check`` on a config that does not load: its errors, and in the same round
    the secrets its tables name that the environment lacks (a second run of check must
    not be needed to learn of them)."""
    from bot.preflight import unloadable_secrets

    path = path or Path.cwd() / DEFAULT_CONFIG_NAME
    try:  # as load_config reads it: a FIFO or /dev/zero is never read
        data = tomllib.loads(read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except (UnreadableFile, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        data = {}  # the error says why it cannot be read
    problems = [*str(err).splitlines(), *unloadable_secrets(data)]
    print("\n".join(f"relbot check: {p}" for p in problems), file=sys.stderr)
    return 1


def _quiet_sdks(level: str) -> None:
    """``relbot check`` says each service's problem in one sentence with its fix: the chat
    SDKs' own WARNING and ERROR lines about the same failure are noise on the operator's
    screen (kept with --log-level debug). A filter on the handlers, not a level: slack_bolt
    gives each app's logger a level of its own."""
    if level != "debug":
        for handler in logging.getLogger().handlers:
            handler.addFilter(_not_an_sdk)


def _not_an_sdk(record: logging.LogRecord) -> bool:
    return record.name.partition(".")[0] not in ("slack_sdk", "slack_bolt", "discord")


def _slack_manifest(config: Config, args: argparse.Namespace) -> int:
    """Print the Slack app manifest: the command names and mode of ``[slack]``."""
    print(slack_manifest(config, args.url), end="")
    return 0


def _probe_health(config: Config, args: argparse.Namespace) -> int:
    """The container's HEALTHCHECK: ask the running bot on the configured host and port."""
    from bot.web.healthcheck import probe, probe_at

    if args.board:
        healthy, line = probe_at(_healthz(args.board))
    elif config.model.health is None and config.origin == BUILT_IN:
        raise RelbotError(
            f"the {BUILT_IN} has no [health] table: the demo serves its board (and /healthz) "
            "on a free port, printed at start; ask it with relbot health --board "
            "http://127.0.0.1:PORT/"
        )
    else:
        healthy, line = probe(config)
    print(f"relbot health: {line}", file=sys.stdout if healthy else sys.stderr)
    return 0 if healthy else 1


def _healthz(board: str) -> str:
    """``/healthz`` beside the board at ``board`` (``http://HOST:PORT/``, or its pages)."""
    parts = urllib.parse.urlsplit(board if "//" in board else f"http://{board}")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RelbotError(f"--board: {board!r} is not a URL; give the one relbot run printed.")
    return f"{parts.scheme}://{parts.netloc}/healthz"


def _registry_problems(config: Config) -> list[str]:
    registry = build_registry(config)
    return registry.check() if registry is not None else []


def _announcing_problems(config: Config, name: str) -> list[str]:
    """Reach what the announcement needs, when configured: the public site, python.org's
    API v2 with its token, the forum with its key."""
    from bot.app import build_downloads, build_forum, build_release_page

    service = {
        "downloads": build_downloads,
        "release_page": build_release_page,
        "discourse": build_forum,
    }[name](config)
    return service.check() if service is not None else []


def _platform_problems(config: Config, name: str) -> list[str]:
    return build_platform(config, name).check()


def _seconds(text: str, least: float = 0.0) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not least <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give at least {least:g} seconds")
    return value


def _wait(config: Config, args: argparse.Namespace) -> int:
    """Block until every release named reaches ``--until``; print its board JSON (several: a
    JSON list of them, in the order named) and exit 0, or say in one sentence which release
    stopped the wait and why: 3 timeout, 4 held, 5 aborted (docs/commands.md)."""
    from bot.wait.judge import Outcome, Source, Until, wait_all
    from bot.wait.sources import source_for

    tags, until = [ReleaseTag.parse(tag) for tag in args.tag], Until(args.until)
    if len(set(tags)) < len(tags):
        twice = next(str(tag) for tag in tags if tags.count(tag) > 1)
        raise RelbotError(f"{twice} is named twice; name each release once.")

    def say(line: str) -> None:  # progress, for a person watching; scripts get the outcome
        if args.progress or sys.stderr.isatty():
            print(f"relbot wait: {line}", file=sys.stderr, flush=True)

    async def waiting() -> int:
        sources: list[tuple[str, Source]] = []
        try:
            for tag in tags:
                sources.append((str(tag), source_for(config, tag, until, args.board)))
            result = await wait_all(
                sources, until, timeout=args.timeout, interval=args.interval, say=say
            )
        finally:
            for _, source in sources:
                await source.close()
        if result.verdict.outcome is Outcome.REACHED:
            shown = result.releases[0] if len(tags) == 1 else list(result.releases)
            print(json.dumps(shown, indent=1, ensure_ascii=False))
        else:
            print(f"relbot wait: {result.verdict.sentence}.", file=sys.stderr)
        return int(result.verdict.outcome or 0)

    try:
        return asyncio.run(waiting())
    except KeyboardInterrupt:
        print("relbot wait: interrupted.", file=sys.stderr)
        return 130
