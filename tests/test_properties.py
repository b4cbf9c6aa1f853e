"""Whatever is typed, the gate answers exactly once, never raises, and changes nothing unless
the line was a valid command from someone allowed to give it."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.domain.tags import ReleaseTag
from bot.ports.messages import Reply
from tests.conftest import World

TAGS = ["3.14.1", "3.14.0rc1", "3.13.2", "3.14", "3.14.1\u200b", "../3.14.1", "3.15.0a1"]
WORDS = st.sampled_from(
    [
        "/ready", "/unready", "/status", "/hold", "/unhold", "/publish", "/respin", "/help",
        "confirm", "CODE0001", "source", "docs", "windows", "macos", "wizard", *TAGS,
        "/", "", "\x00", "é", "🚀", "-" * 40,
    ]
)  # fmt: skip
LINES = st.one_of(
    st.lists(WORDS, max_size=6).map(" ".join),
    st.text(max_size=60),
    st.text(min_size=990, max_size=1100),
)
PEOPLE = st.sampled_from(["hugo", "alice", "steve", "ned", "eve", "mallory"])


def snapshot(world: World) -> tuple[object, ...]:
    states = [world.store.release(ReleaseTag.parse(t)) for t in ("3.14.1", "3.14.0rc1", "3.13.2")]
    return (repr(states), world.public_files(), world.staged_files("3.14.1"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(steps=[("eve", "/status 3.13.2")])  # once raised: nothing staged for that tag
@given(steps=st.lists(st.tuples(PEOPLE, LINES), min_size=1, max_size=6))
def test_any_line_gets_one_reply_and_refusals_change_nothing(
    steps: list[tuple[str, str]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        world = World(Path(folder))
        world.stage("3.14.1")
        world.stage("3.14.0rc1", roles=["macos"])
        asyncio.run(_play(world, steps))


async def _play(world: World, steps: list[tuple[str, str]]) -> None:
    await world.say("ned", "/ready macos 3.14.1")
    for person, line in steps:
        before = snapshot(world)
        reply = await world.say(person, line)
        assert isinstance(reply, Reply) and reply.text.strip()
        if reply.private:
            assert snapshot(world) == before, (person, line, reply.text)
