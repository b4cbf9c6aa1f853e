"""``relbot wait TAG [TAG ...]``: one wait for several releases (the day's releases of several
branches). Over once every one has reached the state at the same look; a hold or an abort of
any ends it, naming that release; the timeout names the first not there yet and the others.
The loop on scripted sources and a test clock, then the command on a real gate's state file.
One tag is the wait as it always was (tests/test_wait*.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.wait.judge import LookFailed, Outcome, Source, Until, wait_all
from tests.conftest import World
from tests.test_wait import LoopClock, Script, release

NEWER, OLDER = "3.14.2", "3.14.1"
MISSING = {"macos": {"state": "incomplete"}}


def of(tag: str, **fields: Any) -> dict[str, Any]:
    return release(tag=tag, **fields)


async def waited(
    scripts: dict[str, Script], *, timeout: float | None = None, lines: list[str] | None = None
) -> tuple[Outcome | None, str, tuple[Any, ...], LoopClock]:
    clock = LoopClock()
    sources: list[tuple[str, Source]] = list(scripts.items())
    result = await wait_all(
        sources,
        Until.READY,
        timeout=timeout,
        interval=2,
        say=(lines if lines is not None else []).append,
        clock=clock,
        sleep=clock.sleep,
    )
    return result.verdict.outcome, result.verdict.sentence, result.releases, clock


# -- the loop ----------------------------------------------------------------------------------


async def test_every_release_reached_at_one_look_ends_the_wait_in_the_order_named() -> None:
    late = of(NEWER, ready=False, roles=MISSING)
    lines: list[str] = []
    outcome, sentence, releases, clock = await waited(
        {NEWER: Script([late, late, of(NEWER)]), OLDER: Script([None, of(OLDER)])}, lines=lines
    )

    assert (outcome, sentence) == (Outcome.REACHED, f"{NEWER} and {OLDER} are ready")
    assert releases == (of(NEWER), of(OLDER)) and clock.now == 4
    assert lines == [
        f"{NEWER}: not ready: macos (incomplete)",
        f"{OLDER}: nothing is recorded for {OLDER} yet",
    ]


async def test_a_release_that_went_back_is_waited_for_again() -> None:
    """Ready, then a claim withdrawn: not ready any more while the other one catches up."""
    late = of(OLDER, ready=False, roles=MISSING)
    newer = Script([of(NEWER), of(NEWER, ready=False, roles=MISSING), of(NEWER)])
    outcome, _, _, clock = await waited({NEWER: newer, OLDER: Script([late, of(OLDER)])})

    assert outcome is Outcome.REACHED and clock.now == 4 and newer.looks == 3


async def test_a_hold_of_any_release_ends_the_wait_naming_it() -> None:
    held = of(OLDER, ready=False, roles=MISSING, holds=[{"by": "ned", "reason": "notarization"}])
    late = of(NEWER, ready=False, roles=MISSING)

    outcome, sentence, _, _ = await waited({NEWER: Script([late]), OLDER: Script([held])})

    assert outcome is Outcome.HELD
    assert sentence == (
        f"{OLDER} is held by ned: notarization; wait again once someone says /unhold {OLDER}"
    )


async def test_the_timeout_names_the_first_release_not_there_and_the_others() -> None:
    late = {"ready": False, "roles": MISSING}
    three = {
        "3.15.0": Script([of("3.15.0")]),
        NEWER: Script([of(NEWER, **late)]),
        OLDER: Script([None]),
        "3.13.9": Script([of("3.13.9", **late)]),
    }

    outcome, sentence, releases, clock = await waited(three, timeout=5)

    assert outcome is Outcome.TIMEOUT and clock.now == 5
    assert sentence == (
        f"{NEWER} is not ready after 5 s: not ready: macos (incomplete); nor are {OLDER} and 3.13.9"
    )
    assert releases[2] is None


async def test_one_source_failing_is_waited_out_and_said_once() -> None:
    down = LookFailed("The board cannot be reached.")
    lines: list[str] = []
    late = of(OLDER, ready=False, roles=MISSING)
    outcome, _, _, _ = await waited(
        {
            NEWER: Script([of(NEWER), down, down, of(NEWER)]),
            OLDER: Script([late, late, late, of(OLDER)]),
        },
        lines=lines,
        timeout=60,
    )
    assert outcome is Outcome.REACHED
    assert lines == [
        f"{OLDER}: not ready: macos (incomplete)",
        "The board cannot be reached. Still waiting.",
        "Answering again.",
    ]


# -- the command -------------------------------------------------------------------------------


def relbot_wait(
    world: World, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    code = main(["wait", *args, "--timeout", "0", "--config", str(world.root / "relbot.toml")])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_prints_a_list_in_the_order_named_once_all_are_ready(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World(tmp_path)
    world.stage(OLDER)
    world.stage(NEWER)
    asyncio.run(world.ready_all(OLDER))
    asyncio.run(world.say("steve", f"/ready windows {NEWER}"))

    waiting = relbot_wait(world, capsys, OLDER, NEWER, "--until", "ready")
    asyncio.run(world.ready_all(NEWER))
    both = relbot_wait(world, capsys, NEWER, OLDER, "--until", "ready")
    one = relbot_wait(world, capsys, OLDER, "--until", "ready")

    code, out, err = waiting
    assert (code, out) == (3, "")
    assert err == (
        f"relbot wait: {NEWER} is not ready after 0 s: waiting for /ready from source, docs, "
        "macos.\n"
    )
    code, out, err = both
    assert code == 0 and err == ""
    assert [r["tag"] for r in json.loads(out)] == [NEWER, OLDER]
    code, out, _ = one
    assert code == 0 and json.loads(out)["tag"] == OLDER  # one tag: the object, as always


def test_a_hold_of_one_release_exits_4_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World(tmp_path)
    world.stage(OLDER)
    world.stage(NEWER)
    asyncio.run(world.say("ned", f"/hold {NEWER} notarization failed"))

    code, out, err = relbot_wait(world, capsys, OLDER, NEWER, "--until", "publishable")

    assert (code, out) == (4, "")
    assert err == (
        f"relbot wait: {NEWER} is held by ned: notarization failed; wait again once someone "
        f"says /unhold {NEWER}.\n"
    )


@pytest.mark.parametrize(
    ("tags", "said"),
    [
        ((OLDER, NEWER, OLDER), f"relbot: {OLDER} is named twice; name each release once.\n"),
        ((OLDER, "3.14"), "relbot: "),
    ],
)
def test_a_tag_named_twice_or_not_a_tag_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tags: tuple[str, ...], said: str
) -> None:
    world = World(tmp_path)
    world.stage(OLDER)

    code, out, err = relbot_wait(world, capsys, *tags, "--until", "ready")

    assert (code, out) == (1, "") and err.startswith(said) and err.count("\n") == 1, err
