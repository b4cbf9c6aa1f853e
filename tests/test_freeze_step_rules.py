"""The publish's first step, the bot's own read-only copies of the confirmed files: a new
confirmation copies anew, a freeze resumed after a restart keeps the copies it made."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs
from bot.storage.primitives import Copied, CopyJob
from tests.conftest import World

PKG = "python-3.14.1-macos11.pkg"


class Remembering(LocalStorage):
    """Keeps the plans it was asked to copy."""

    plans: list[PublishPlan]

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        self.plans = [*getattr(self, "plans", []), plan]
        return super().freeze(plan, fresh=fresh)


class KilledAfterTheCopies(LocalStorage):
    """The process dies once every copy is made, before the freeze step is journaled done."""

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        super().freeze(plan, fresh=fresh)
        raise KeyboardInterrupt


def count_copies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    copied: list[str] = []
    original = LocalFs.copy

    def counting(self: LocalFs, jobs: Sequence[CopyJob]) -> list[Copied]:
        copied.extend(Path(job.source).name for job in jobs)
        return original(self, jobs)

    monkeypatch.setattr(LocalFs, "copy", counting)
    return copied


async def test_a_new_confirmation_copies_anew_what_an_earlier_one_left_and_tidies_staging(
    world: World,
) -> None:
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    remembering = Remembering(world.staging, world.public)
    world.start(remembering)
    line = await world.plan("3.14.1")
    world.public.mkdir(parents=True, exist_ok=True)
    (world.public / "3.14.1").write_text("not a folder")  # every promotion fails
    stuck = await world.say("hugo", line)
    assert stuck.private and "did not finish" in stuck.text, stuck.text
    assert not (await world.say("hugo", "/abort 3.14.1")).private
    # Copies an earlier confirmation of the tag left behind (the same plan).
    assert remembering.freeze(remembering.plans[0]) == []
    # The uploader stages the tarball again (a new file, the same bytes), then it is
    # confirmed again: the copy is made of this one, so it is tidied from staging after.
    again = world.root / "uploaded"
    again.write_bytes((world.staging / "3.14.1" / PKG).read_bytes())
    again.replace(world.staging / "3.14.1" / PKG)
    (world.public / "3.14.1").unlink()
    line = await world.plan("3.14.1")
    done = await world.say("hugo", line)

    assert "Published 3.14.1" in done.text, done.text
    assert len(world.public_files()) == len(staged)
    assert world.staged_files("3.14.1") == set()


async def test_a_freeze_resumed_after_a_restart_does_not_copy_its_copies_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(KilledAfterTheCopies(world.staging, world.public))
    with pytest.raises(KeyboardInterrupt):
        await world.say("hugo", line)
    copied = count_copies(monkeypatch)
    world.start()
    await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.public_files()) == len(staged)
    assert copied == []
