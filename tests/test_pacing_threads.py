"""A publish waiting on python.org's budget, or for its turn to purge the CDN, holds none of
the worker threads that the rest of the bot needs: scans, /status and the board run their
blocking reads in the event loop's default pool, which has six threads on two cores."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.domain.history import ReleaseState
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.ports import RegistryReport
from bot.pydotorg.cdn import PurgeReport
from bot.service.pipeline.steps import Purge, Register, Run
from tests.conftest import World

TAGS = [ReleaseTag.parse(t) for t in ("3.15.1", "3.14.2", "3.13.11")]
HOLD = 10.0


class Blocking:
    """A registry and a purger whose every call blocks until ``go`` is set."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.entered = threading.Semaphore(0)

    def _wait(self) -> None:
        self.entered.release()
        assert self.go.wait(HOLD), "never let go"

    def preflight(self, tag: ReleaseTag) -> None: ...

    def check(self) -> list[str]:
        return []

    def sync(
        self, plan: PublishPlan, *, notice: Callable[[str], None] | None = None
    ) -> RegistryReport:
        self._wait()
        return RegistryReport(len(plan.files), 0, 0, 0)

    def ask(self) -> int:
        return 0

    def purge(
        self, tag: ReleaseTag, replaced: Sequence[str] = (), *, since: int | None = None
    ) -> PurgeReport:
        self._wait()
        return PurgeReport((f"https://www.python.org/downloads/{tag}/",))


def run_of(tag: ReleaseTag) -> Run:
    f = PlanFile(f"Python-{tag}.tgz", f"{tag}/Python-{tag}.tgz", "source", 1, "a" * 64)
    return Run(PublishPlan(tag, (f,)), ReleaseState(tag))


async def test_waiting_registrations_and_purges_leave_the_default_pool_free(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    blocking = Blocking()
    world.conn.registry = blocking
    world.conn.purger = blocking
    reporter = world.gate._services.reporter
    steps: list[Register | Purge] = [Register(world.conn, reporter), Purge(world.conn, reporter)]
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(2))  # fewer threads than waits
    waits = [asyncio.create_task(step.run(run_of(tag))) for step in steps for tag in TAGS]
    for _ in range(len(TAGS) + 1):  # three syncs, and the first purge (the others queue)
        assert await asyncio.to_thread(blocking.entered.acquire, True, HOLD)

    read = await asyncio.wait_for(asyncio.to_thread(lambda: "a scan's read"), 5)

    assert read == "a scan's read"
    blocking.go.set()
    details = await asyncio.gather(*waits)
    assert details[:3] == ["1 created, 0 replaced, 0 deleted, 0 unchanged"] * 3
    assert details[3:] == ["1 URLs purged, 0 failed"] * 3
