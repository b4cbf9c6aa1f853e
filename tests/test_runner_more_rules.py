"""What the runner of a confirmed publish keeps across a restart, counts, and answers: a
resumed stopped publish still shows why it stopped, signing that fails counts one failure,
and a confirmation whose storage another bot took at that moment publishes nothing and says
why."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from tests.conftest import World
from tests.signing_fixtures import instance_world, sigstore_instance
from tests.sigstore_instance import SigstoreInstance
from tests.sshd import SshServer
from tests.storage.conftest import sshd
from tests.storage.test_gate_over_sftp import sftp_world
from tests.storage.test_storage_lock import holder
from tests.test_pinning import AppendedAfterTheMove
from tests.test_pipeline_step_rules import TAG, before_step, called_off, confirm_with_login

__all__ = ["sigstore_instance", "sshd"]


async def test_a_stopped_publish_resumed_after_a_restart_keeps_only_its_release_and_says_why(
    world: World,
) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    world.start(AppendedAfterTheMove(world.staging, world.public))
    stopped = await world.say("hugo", line)
    assert "did not finish" in stopped.text, stopped.text
    assert world.events(TAG)[-1] == "stopped"
    why = stopped.text.split("did not finish. ", 1)[1]

    world.start()  # the bot restarted: it remembers nothing it told
    await world.gate.scan()  # the resume finds the publish stopped

    assert world.gate.retained_tags() == {TAG}  # kept in memory for open releases only
    status = (await world.say("hugo", f"/status {TAG}")).text
    head = "publishing now (confirmed by hugo)."
    assert head in status, status
    assert why in status.split(head, 1)[1], status


async def test_signing_that_fails_adds_exactly_one_publish_failure(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.gate.metrics.publish_failures = 4  # failures counted before
    copies = world.storage.work / "frozen" / TAG
    before_step(world, EventKind.STEP_STARTED, "sign", lambda: shutil.rmtree(copies))

    await confirm_with_login(world)

    called_off(world)
    assert world.gate.metrics.publish_failures == 5


async def test_a_confirmation_as_another_bot_takes_the_storage_publishes_nothing_and_says_who(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    world.stage(TAG)
    world.conn.lease = world.storage.lock(holder(str(world.root / "data" / "state.db")))
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    other = holder("/srv/b/state.db", pid=777, host="dl-bot-b")
    append = world.store.append

    def taken_as_confirmed(tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Any:
        if kind is EventKind.CONFIRMED:  # the other bot took the storage just now
            (world.public.parent / ".relbot-public" / "lock").write_bytes(other.to_bytes())
        return append(tag, actor, kind, **data)

    world.store.append = taken_as_confirmed  # type: ignore[method-assign]

    reply = await world.say("hugo", line)

    assert reply.private, reply.text
    assert reply.text.startswith(f"Publishing {TAG} did not finish. Another relbot holds"), (
        reply.text
    )
    assert "pid 777 on host dl-bot-b" in reply.text, reply.text
    assert world.public_files() == set()
    assert "published" not in world.events(TAG)
