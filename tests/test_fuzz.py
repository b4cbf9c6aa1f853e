"""Fuzzing with a fixed seed and a bounded count: random console input (undecodable bytes
under strict UTF-8 included) and mutated configs never produce a traceback. Every outcome
is an answer, a one-sentence error, or success."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.console import Console, ConsoleChat
from bot.cli import main
from bot.config import load_config
from bot.errors import RelbotError
from bot.gate import Gate
from bot.scheduler import Poller
from tests.conftest import World

SEED = 20261202
VERBS = ["/ready", "/unready", "/status", "/hold", "/unhold", "/publish", "/respin", "/help", "/as"]
ARGS = [
    "source", "docs", "windows", "macos", "wizard", "3.14.1", "3.14.0rc1", "3.14.1rc0",
    "3.14.11", "3.13.2", "confirm", "CODE0001", "code0002", "hugo", "steve", "eve", "nobody",
    "\x1b[31mred\x1b[0m", "\x00", "é", "🚀", "\u202e", "../3.14.1", "-" * 50, "3.14",
]  # fmt: skip
ODD_BYTES = [b"\xe9", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x80abc", b"\r", b"\x00", b"\x1b["]


def random_line(rng: random.Random) -> bytes:
    """A command-ish line, sometimes with bytes that are not UTF-8, sometimes pure noise."""
    roll = rng.random()
    if roll < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))).replace(b"\n", b"")
    words = [rng.choice(VERBS)] + [rng.choice(ARGS) for _ in range(rng.randrange(4))]
    line = " ".join(words).encode()
    if roll < 0.5:
        cut = rng.randrange(len(line) + 1)
        line = line[:cut] + rng.choice(ODD_BYTES) + line[cut:]
    if roll > 0.97:
        line = line * 40  # over the length limit
    return line


def strict_stdin(lines: list[bytes]) -> io.TextIOWrapper:
    """Standard input as a strict UTF-8 locale gives it."""
    return io.TextIOWrapper(io.BytesIO(b"\n".join(lines) + b"\n"), "utf-8", errors="strict")


def test_console_fuzz_under_strict_utf8_answers_every_line_and_never_raises(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    lines = [random_line(rng) for _ in range(1500)]
    world = World(tmp_path)
    world.stage("3.14.1")
    out = io.StringIO()
    gate = Gate(
        world.config,
        world.store,
        world.storage,
        ConsoleChat(out),
        verifier=world.verifier,
        clock=world.clock,
        sleep=world._settle,
    )
    console = Console(gate, Poller(gate, 3600), list(world.config.people), "hugo", out)
    answers: list[str] = []
    console._say = answers.append  # type: ignore[method-assign]

    code = asyncio.run(asyncio.wait_for(console.run(strict_stdin(lines)), 60))

    assert code == 0
    typed = [line.decode("utf-8", "replace").rstrip("\r") for line in lines]
    assert len(answers) == sum(1 for line in typed if line.strip()) > 1000  # one answer each
    printed = "\n".join(answers) + out.getvalue()
    printed.encode("utf-8")  # a strict UTF-8 terminal can print every answer
    assert "\x1b" not in printed and "\x00" not in printed


def test_console_fuzz_through_relbot_run_with_a_strict_locale(tmp_path: Path) -> None:
    relbot = shutil.which("relbot", path=str(Path(sys.executable).parent))
    assert relbot is not None
    rng = random.Random(SEED + 1)
    lines = [random_line(rng) for _ in range(200)] + [b"/help"]

    done = subprocess.run(
        [relbot, "run"],
        cwd=tmp_path,
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"},
    )

    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    assert b"relbot commands" in done.stdout  # still reading at the last line


# -- config mutations -------------------------------------------------------------------------

BASE = textwrap.dedent("""
    profile = "cpython"
    state = "data/state.db"
    poll_interval = 30
    confirm_timeout = 600

    [storage]
    kind = "local"
    staging = "data/staging"
    public = "data/public"

    [signatures]
    require = false
    trusted_root = "production"

    [pydotorg]
    kind = "none"

    [people.hugo]
    rm = ["3.14", "3.15"]
    roles = ["source", "docs"]

    [people.steve]
    roles = ["windows"]
    """)
VALUES = [
    '""', "0", "-1", "3.5", "true", "[]", '["x"]', "{}", '"sftp"', '"api"', '"none"',
    '"data/staging"', '"data"', '"/"', '"data/st\\u0000aging"', '"\\u001b[31m"', '"caf\\u00e9"',
    '"../outside"', '"3.14"', '["3.14", "9"]', '["wizard"]', "1e400", '"x" "y"',
]  # fmt: skip


def mutate(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines()
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.2:
            del lines[i]
        elif roll < 0.3:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif roll < 0.75 and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {rng.choice(VALUES)}"
        elif roll < 0.85:
            lines.insert(
                i, f"{rng.choice(['unknown', 'kind', 'host', 'port'])} = {rng.choice(VALUES)}"
            )
        else:
            lines.insert(i, rng.choice(["[storage]", "[slack]", "[people.x]", "[people]", "[["]))
    data = "\n".join(lines).encode()
    if rng.random() < 0.1:
        cut = rng.randrange(len(data))
        data = data[:cut] + rng.choice(ODD_BYTES) + data[cut:]
    if rng.random() < 0.05:
        data = data[: rng.randrange(len(data))]
    return data


def test_config_mutation_sweep_gives_success_or_one_sentence_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    outcomes = {"valid": 0, "refused": 0}
    for number in range(150):
        folder = tmp_path / f"c{number}"
        folder.mkdir()
        path = folder / "relbot.toml"
        path.write_bytes(mutate(rng, BASE))
        try:
            config = load_config(path)
        except RelbotError as err:
            outcomes["refused"] += 1
            for sentence in str(err).splitlines():
                assert sentence.startswith(str(path)) or sentence.startswith("profile"), sentence
                assert sentence.endswith("."), sentence
            continue
        outcomes["valid"] += 1
        if config.model.storage.kind != "local" or config.platforms():
            continue  # would reach out to a server; loading is what is swept here
        for command in (["status"], ["manifest", "3.14.1"], ["audit", "3.14.1"]):
            with contextlib.chdir(folder):
                code = main([*command, "--config", str(path)])
            assert code in (0, 1)
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
    # Both outcomes were exercised: the sweep is not all refusals or all successes.
    assert outcomes["valid"] > 10 and outcomes["refused"] > 10, outcomes
