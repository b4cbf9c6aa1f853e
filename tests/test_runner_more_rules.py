"""What the runner of a confirmed publish keeps across a restart, counts, and answers: a
resumed stopped publish still shows why it stopped, signing that fails counts one failure,
a finished publish counts one publish, a confirmation whose storage another bot took at that
moment publishes nothing and says why, a confirmation that meets an unfinished /abort
finishes the abort, and a conflict is never undone while storage cannot tell what is
public."""

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
from tests.test_runner_rules import confirm, faulty, frozen, notices, stopped_while_blind

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


async def planned_with_a_lease(tmp_path: Path, sshd: SshServer) -> tuple[World, str, Any]:
    """A bot over SFTP holding the storage's lease, TAG planned; the line that confirms it,
    and the lease of another bot that may take the storage."""
    world = sftp_world(tmp_path, sshd)
    world.stage(TAG)
    world.conn.lease = world.storage.lock(holder(str(world.root / "data" / "state.db")))
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    return world, line, holder("/srv/b/state.db", pid=777, host="dl-bot-b")


async def test_a_confirmation_as_another_bot_takes_the_storage_publishes_nothing_and_says_who(
    tmp_path: Path, sshd: SshServer
) -> None:
    world, line, other = await planned_with_a_lease(tmp_path, sshd)
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
    assert world.gate.metrics.refusals == {"publish_stopped": 1}  # confirmed, not finished
    assert world.public_files() == set()
    assert "published" not in world.events(TAG)


async def test_a_confirmation_made_while_an_unfinished_abort_waits_finishes_the_abort(
    world: World,
) -> None:
    # A publish stopped at the promotion while storage could not tell what was public (so
    # it was told as not abortable); /abort is journaled once storage can tell, but dropping
    # the copies fails, so the abort waits for the next scan. The RM confirms the offered
    # finish first: the journaled abort wins, once, and nothing becomes public.
    storage = await stopped_while_blind(world)  # files of it may be public
    storage.blind = False
    storage.undroppable = True
    failed = await world.say("hugo", f"/abort {TAG}")
    assert failed.private and "Cannot drop the copies" in failed.text, failed.text
    assert world.events(TAG)[-1] == "aborting"
    storage.undroppable = False
    finish = await world.plan(TAG)  # the stopped publish's finishing plan

    reply = await world.say("hugo", finish)

    assert reply.private
    assert reply.text == (
        f"Publishing {TAG} was aborted: nothing was made public, and staging holds the files "
        "as the uploaders left them (the bot only copied them). Claims are unchanged and "
        f"/publish {TAG} works again."
    )
    await world.gate.scan()
    assert world.events(TAG, EventKind.ABORTED) == ["aborted"]
    assert world.events(TAG, EventKind.PUBLISHED) == []
    assert world.public_files() == set()
    assert not frozen(world).exists()


async def test_a_conflict_before_anything_moved_stops_rather_than_undoes_when_storage_cannot_tell(
    world: World,
) -> None:
    # A file public before the confirmation holds other bytes than the one planned for its
    # name, so the promotion moves nothing; but storage cannot look at the public folder
    # now, so what is public cannot be checked: the publish is never undone on the
    # promotion's word alone (an abort must never half-undo); it stops, as not abortable.
    storage = faulty(world)
    in_the_way = world.public / TAG / "Python-3.14.1.tgz"
    in_the_way.parent.mkdir(parents=True)
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    in_the_way.write_text("another build, public since the plan")
    append = world.store.append

    def blind_once_confirmed(tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Any:
        if kind is EventKind.CONFIRMED:
            storage.blind = True
        return append(tag, actor, kind, **data)

    world.store.append = blind_once_confirmed  # type: ignore[method-assign]

    reply = await world.say("hugo", line)

    stopped = f"Publishing {TAG} did not finish. Publishing {TAG} stopped at promote: "
    assert reply.text.startswith(stopped), reply.text
    assert reply.text.endswith(
        "Files of it are public already, so it cannot be aborted: /publish 3.14.1 offers to "
        "finish without Python-3.14.1.tgz (stage it again later as late files)."
    ), reply.text
    assert world.events(TAG)[-1] == "stopped"
    assert world.events(TAG, EventKind.ABORTED) == []
    assert frozen(world).exists()


async def test_a_publish_that_finishes_adds_exactly_one_to_the_publishes_count(
    world: World,
) -> None:
    world.gate.metrics.publishes = 4  # publishes counted before

    reply = await confirm(world)

    assert reply == f"Published {TAG}: {len(world.public_files())} files are public."
    assert world.gate.metrics.publishes == 5


async def test_a_confirmation_after_another_bot_took_the_storage_is_refused_in_one_sentence(
    tmp_path: Path, sshd: SshServer
) -> None:
    world, line, other = await planned_with_a_lease(tmp_path, sshd)
    (world.public.parent / ".relbot-public" / "lock").write_bytes(other.to_bytes())

    reply = await world.say("hugo", line)

    assert reply.private, reply.text
    assert reply.text.startswith("Another relbot holds"), reply.text
    assert "pid 777 on host dl-bot-b" in reply.text, reply.text
    assert reply.text.endswith(" Nothing was published."), reply.text
    assert "confirmed" not in world.events(TAG)
    assert world.public_files() == set()


async def test_a_new_confirmation_that_waits_for_the_same_reason_tells_the_channel_again(
    world: World,
) -> None:
    # The channel hears a waiting publish's reason once, not at every retry; but a new
    # confirmation is a new publish: its wait is told even in the same words.
    world.public.mkdir(parents=True)
    (world.public / TAG).write_text("a file where the release's folder goes")
    await confirm(world)  # waits at the promotion
    await world.gate.scan()  # retried: not told again
    assert not (await world.say("hugo", f"/abort {TAG}")).private

    again = await world.say("hugo", await world.plan(TAG))

    said = again.text.removeprefix(f"Publishing {TAG} did not finish. ")
    assert said.startswith(f"Publishing {TAG} stopped at promote: "), again.text
    told = [n for n in notices(world) if n.text == said]
    assert len(told) == 2, [n.text for n in notices(world)]
