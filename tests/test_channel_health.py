"""A channel that refuses the bot's posts is recorded once, probed at most every few seconds
while it does, and forgotten when a probe or a post finds it fixed."""

from __future__ import annotations

from bot.channel_health import ChannelHealth


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_refusal_is_news_once_and_gone_after_a_post() -> None:
    health = ChannelHealth()
    assert health.refused("slack", "not in the channel")
    assert not health.refused("slack", "not in the channel")
    assert health.refused("slack", "archived")  # another reason is news again
    assert health.problems == {"slack": "archived"}
    assert health.posted("slack") and not health.posted("slack")
    assert health.problems == {}


async def test_probes_run_only_while_refused_and_at_most_every_recheck_after_seconds() -> None:
    clock = Clock()
    health = ChannelHealth(recheck_after=10, clock=clock)
    answers: list[str | None] = ["still not in", "", None]
    asked = []

    async def probe() -> str | None:
        asked.append(clock.now)
        return answers.pop(0)

    health.watch("slack", probe)
    await health.recheck()  # nothing refused: nothing asked
    health.refused("slack", "not in the channel")
    await health.recheck()
    assert health.problems == {"slack": "still not in"}  # the probe's sentence
    clock.now += 5
    await health.recheck()  # too soon
    clock.now += 5
    await health.recheck()  # "": cannot tell, as it was
    assert health.problems == {"slack": "still not in"}
    clock.now += 10
    await health.recheck()

    assert asked == [100.0, 110.0, 120.0]
    assert health.problems == {}
