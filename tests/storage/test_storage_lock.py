"""One bot per download server: the storage lock, on both backends, in the gate and in
``relbot run``."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bot.errors import StagingUnreachable, StorageLocked
from bot.ports.lease import Holder, StorageLease
from bot.ports.messages import ChannelKind
from bot.storage.local import LocalStorage
from bot.storage.lock import LateLease
from tests.conftest import World
from tests.sshd import SshServer
from tests.storage.conftest import Backend, sftp_storage, staging_and_public
from tests.storage.test_gate_over_sftp import sftp_world

TIMEOUT = 60
LOCK = Path(".relbot-public") / "lock"  # in the bot's work folder, beside public


def lock_file(backend: Backend) -> Path:
    return backend.work / "lock"


def holder(state: str, pid: int = 4242, host: str = "dl-bot-a") -> Holder:
    return replace(Holder.this_process(Path(state), 30), pid=pid, host=host)


def test_a_second_bot_on_the_same_storage_is_refused_naming_the_first(backend: Backend) -> None:
    first = backend.make().lock(holder("/srv/a/state.db"))

    with pytest.raises(StorageLocked) as refused:
        backend.make().lock(holder("/srv/b/state.db", pid=777, host="dl-bot-b"))

    message = str(refused.value)
    assert "pid 4242" in message and "dl-bot-a" in message and "/srv/a/state.db" in message
    assert "since" in message
    first.release()
    backend.make().lock(holder("/srv/b/state.db", pid=777)).release()  # free once released


def test_the_lock_file_is_in_the_bots_work_folder_out_of_uploaders_reach(
    backend: Backend,
) -> None:
    lease = backend.make().lock(holder("/srv/a/state.db"))
    try:
        assert lock_file(backend).is_file()
        assert stat.S_IMODE(backend.work.stat().st_mode) == 0o700
        assert list(backend.staging.iterdir()) == []  # nothing of the bot's in staging
    finally:
        lease.release()


def test_over_sftp_a_holder_whose_lock_was_taken_learns_it_at_its_next_renewal(
    sshd: SshServer, tmp_path: Path
) -> None:
    staging, public = staging_and_public(tmp_path)
    first = sftp_storage(sshd, staging, public).lock(holder("/srv/a/state.db"))
    (tmp_path / LOCK).unlink()  # an operator removed it; another bot took it
    second = sftp_storage(sshd, staging, public).lock(
        holder("/srv/b/state.db", pid=777, host="dl-bot-b")
    )

    with pytest.raises(StorageLocked) as refused:
        first.renew()

    assert "pid 777" in str(refused.value) and "dl-bot-b" in str(refused.value)
    second.renew()  # still the holder
    second.release()


def test_locally_the_kernel_lock_decides_and_a_removed_lock_file_is_written_back(
    tmp_path: Path,
) -> None:
    staging, public = staging_and_public(tmp_path)
    first = LocalStorage(staging, public).lock(holder("/srv/a/state.db"))
    lock = tmp_path / LOCK
    lock.unlink()  # an operator removed it: no other bot can come in for that

    with pytest.raises(StorageLocked, match="Another relbot holds the storage"):
        LocalStorage(staging, public).lock(holder("/srv/b/state.db", pid=777))
    first.renew()
    assert Holder.from_bytes(lock.read_bytes()) == first.holder  # written back

    first.release()  # a bot that stops (or dies: the kernel drops its lock)
    second = LocalStorage(staging, public).lock(holder("/srv/b/state.db", pid=777))
    assert Holder.from_bytes(lock.read_bytes()) == second.holder
    second.release()


# A local lock dies with its process (flock); only the SFTP lock file can be abandoned.


def test_over_sftp_a_lock_whose_heartbeat_stopped_is_taken_over(
    sshd: SshServer, tmp_path: Path
) -> None:
    staging, public = staging_and_public(tmp_path)
    dead = holder("/srv/a/state.db")
    dead = replace(dead, beat=time.time() - dead.stale_after - 1)
    sftp_storage(sshd, staging, public).lock(dead)  # its bot was killed

    taker = sftp_storage(sshd, staging, public).lock(holder("/srv/b/state.db", 777))

    lock = tmp_path / LOCK
    assert Holder.from_bytes(lock.read_bytes()) == taker.holder
    taker.renew()
    assert Holder.from_bytes(lock.read_bytes()) == taker.holder  # new beat
    taker.release()
    assert {p.name for p in lock.parent.iterdir()} == {"frozen", "aside"}  # nothing aside


def test_over_sftp_a_live_lock_is_never_taken_over(sshd: SshServer, tmp_path: Path) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    live = sftp_storage(sshd, staging, public).lock(holder("/srv/a/state.db"))
    live.renew()  # a heartbeat

    with pytest.raises(StorageLocked, match="pid 4242"):
        sftp_storage(sshd, staging, public).lock(holder("/srv/b/state.db", pid=777))
    live.release()


# -- the gate ---------------------------------------------------------------------------------


async def test_a_confirm_is_refused_while_another_bot_holds_the_storage(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    world.stage("3.14.1")
    world.conn.lease = world.storage.lock(holder(str(world.root / "data" / "state.db")))
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    # Another bot took the storage over (this one's heartbeat had stalled, say).
    other = holder("/srv/b/state.db", pid=777)
    (world.public.parent / ".relbot-public" / "lock").write_bytes(other.to_bytes())

    reply = await world.say("hugo", line)

    assert reply.private and "pid 777" in reply.text and "Nothing was published" in reply.text
    assert world.public_files() == set()
    assert "confirmed" not in world.events("3.14.1")
    await world.gate.scan()
    await world.gate.scan()
    notices = [n for n in world.chat.texts(ChannelKind.NOTICE) if "pid 777" in n]
    assert len(notices) == 1  # told once, not every scan


# -- relbot run -------------------------------------------------------------------------------


def test_a_second_relbot_run_on_the_same_storage_exits_at_once_naming_the_holder(
    tmp_path: Path,
) -> None:
    relbot = shutil.which("relbot", path=str(Path(sys.executable).parent))
    assert relbot is not None
    team = textwrap.dedent("""
        [storage]
        staging = "../shared/staging"
        public = "../shared/public"

        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs"]
        """)
    for bot in ("a", "b"):
        (tmp_path / bot).mkdir()
        (tmp_path / bot / "relbot.toml").write_text(team)
    for name in ("staging", "public"):
        (tmp_path / "shared" / name).mkdir(parents=True)  # `relbot run` creates no folder
    lock = tmp_path / "shared" / LOCK
    first = subprocess.Popen(
        [relbot, "run"], cwd=tmp_path / "a", stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (lock.exists() and f'"pid": {first.pid}' in lock.read_text()):
            assert first.poll() is None, "the first relbot run exited early"
            assert time.monotonic() < deadline, "the first relbot run never took the lock"
            time.sleep(0.05)

        second = subprocess.run(
            [relbot, "run"],
            cwd=tmp_path / "b",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

        assert second.returncode == 1
        assert "Another relbot holds the storage" in second.stderr
        assert f"pid {first.pid}" in second.stderr
        assert str(tmp_path / "a" / "relbot-data" / "state.db") in second.stderr
        assert "Traceback" not in second.stderr
        assert first.poll() is None
    finally:
        assert first.stdin is not None
        first.stdin.close()
        assert first.wait(timeout=TIMEOUT) == 0
    assert not os.path.exists(lock)  # released when the first bot stopped


async def test_a_bot_that_started_while_the_storage_was_down_publishes_once_it_holds_the_lock(
    world: World,
) -> None:
    attempts: list[int] = []

    def take() -> StorageLease:
        attempts.append(1)
        if len(attempts) == 1:
            raise StagingUnreachable("Cannot reach dl.example.org (connection refused).")
        return world.storage.lock(holder("/srv/a/state.db"))

    world.conn.lease = LateLease(take)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")

    refused = await world.say("hugo", line)
    published = await world.say("hugo", line)

    assert refused.private and "Nothing was published" in refused.text
    assert not published.private and "Published 3.14.1" in published.text, published.text
    assert len(attempts) == 2


def test_over_sftp_a_bot_that_lost_the_lock_takes_it_again_once_the_other_stops(
    sshd: SshServer, tmp_path: Path
) -> None:
    staging, public = staging_and_public(tmp_path)
    first = sftp_storage(sshd, staging, public).lock(holder("/srv/a/state.db"))
    (tmp_path / LOCK).unlink()
    second = sftp_storage(sshd, staging, public).lock(holder("/srv/b/state.db", pid=777))
    with pytest.raises(StorageLocked):
        first.renew()

    second.release()
    first.renew()  # free again: taken back

    with pytest.raises(StorageLocked, match="pid 4242"):
        sftp_storage(sshd, staging, public).lock(holder("/srv/c/state.db", pid=888))
    first.release()


def test_renewals_at_the_same_moment_from_several_publishes_all_succeed(
    backend: Backend,
) -> None:
    """Five releases confirmed in the same second each renew the lock before moving
    anything, each from a thread of its own: none may be refused by another's renewal."""
    lease = backend.make().lock(holder("/srv/a/state.db"))
    start = threading.Barrier(5)
    failures: list[BaseException] = []

    def renew() -> None:
        start.wait()
        try:
            for _ in range(20):
                lease.renew()
        except BaseException as err:  # noqa: BLE001 - the test reports whatever it was
            failures.append(err)

    threads = [threading.Thread(target=renew) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    try:
        assert failures == []
        assert Holder.from_bytes(lock_file(backend).read_bytes()) is not None
    finally:
        lease.release()
