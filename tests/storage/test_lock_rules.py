"""The storage lock's rules, written once over the filesystem interface (bot/storage/lock.py):
who is told what when the lock is taken, when an abandoned lock is taken over, how a holder
keeps it (its heartbeat) and gives it back. On real folders of this machine; where the rule
is the one of a backend without kernel locks (SFTP), on this machine's filesystem with its
kernel locks left out, and with a clock the test sets."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from bot.errors import StorageError, StorageLocked
from bot.ports.lease import Holder, StorageLease
from bot.storage.local import LocalStorage
from bot.storage.local_fs import LocalFs
from bot.storage.lock import LateLease, Lease
from bot.storage.overlap import lock_unless_overlapping
from bot.storage.primitives import FileSystem, Places
from tests.mounts import tmpfs
from tests.storage.conftest import staging_and_public

WHERE = "dl.example.org:/srv/.relbot-public"


def holder(state: str, pid: int = 4242, host: str = "dl-bot-a", beat: float = 1000.0) -> Holder:
    made = Holder.this_process(Path(state), 30)
    return replace(made, pid=pid, host=host, since=beat, beat=beat, stale_after=300.0)


class NoKernelLocks(LocalFs):
    """This machine's filesystem as the lock sees a server over SFTP: no kernel locks, so
    only the lock file and its heartbeat say who holds the storage."""

    def pin(self, path: str) -> bool | None:
        return None

    def unpin(self, path: str) -> None:
        pass


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def places(tmp_path: Path) -> Places:
    for name in ("staging", "public"):
        (tmp_path / name).mkdir()
    return Places(str(tmp_path / "staging"), str(tmp_path / "public"), str(tmp_path / "work"))


def lease(fs: FileSystem, places: Places, who: Holder, clock: Clock | None = None) -> Lease:
    def run(what: str, op: object) -> None:
        op(fs)  # type: ignore[operator]

    return Lease(run, places, WHERE, who, clock or Clock(who.beat))


def lock_file(places: Places) -> Path:
    return Path(places.lock)


def named(places: Places) -> Holder | None:
    return Holder.from_bytes(lock_file(places).read_bytes())


# -- who is told what -------------------------------------------------------------------------


def test_a_bot_kept_out_by_the_kernel_lock_of_a_bot_whose_lock_file_is_gone_hears_so(
    tmp_path: Path,
) -> None:
    staging, public = staging_and_public(tmp_path)
    first = LocalStorage(staging, public).lock(holder("/srv/a/state.db"))
    (tmp_path / ".relbot-public" / "lock").unlink()  # removed by hand

    with pytest.raises(StorageLocked) as refused:
        LocalStorage(staging, public).lock(holder("/srv/b/state.db", pid=777))

    assert str(refused.value) == (
        f"Another relbot holds the storage {tmp_path / '.relbot-public'}: a relbot that left "
        "no name; stop it first, only one bot may publish to a download server."
    )
    first.release()


def test_without_kernel_locks_a_lock_file_naming_no_relbot_is_left_alone_and_named(
    places: Places,
) -> None:
    lease(NoKernelLocks(), places, holder("/srv/a/state.db")).acquire()
    lock_file(places).write_text("not json\n")

    with pytest.raises(StorageLocked) as refused:
        lease(NoKernelLocks(), places, holder("/srv/b/state.db", pid=777)).acquire()

    assert str(refused.value) == (
        f"{places.lock} on {WHERE} names no relbot; if no other relbot runs on this storage, "
        "remove that file."
    )
    assert lock_file(places).read_text() == "not json\n"


def test_with_kernel_locks_a_lock_file_naming_no_relbot_is_taken_when_no_bot_runs(
    places: Places,
) -> None:
    os.mkdir(places.work, 0o700)
    lock_file(places).write_text("not json\n")  # left by a crash while it was written
    taker = holder("/srv/b/state.db", pid=777)

    lease(LocalFs(), places, taker).acquire()

    assert named(places) == taker


def test_a_bot_that_asks_again_for_the_lock_it_holds_keeps_it(places: Places) -> None:
    fs, me = NoKernelLocks(), holder("/srv/a/state.db")
    lease(fs, places, me).acquire()

    lease(fs, places, me).acquire()  # a retry: the first answer was lost

    assert named(places) == me


def test_without_kernel_locks_a_live_holder_is_named_with_the_storage(places: Places) -> None:
    lease(NoKernelLocks(), places, holder("/srv/a/state.db")).acquire()

    with pytest.raises(StorageLocked) as refused:
        lease(NoKernelLocks(), places, holder("/srv/b/state.db", pid=777)).acquire()

    assert f"Another relbot holds the storage {WHERE}: relbot pid 4242" in str(refused.value)


# -- when an abandoned lock is taken over -----------------------------------------------------


def test_a_lock_whose_heartbeat_is_exactly_stale_after_old_is_still_held(places: Places) -> None:
    lease(NoKernelLocks(), places, holder("/srv/a/state.db", beat=1000.0)).acquire()
    other = holder("/srv/b/state.db", pid=777, host="dl-bot-b")

    with pytest.raises(StorageLocked, match="pid 4242"):
        lease(NoKernelLocks(), places, other, Clock(1300.0)).acquire()
    lease(NoKernelLocks(), places, other, Clock(1300.5)).acquire()  # older: abandoned

    assert named(places) == other


def test_a_dead_holders_lock_that_cannot_be_moved_aside_is_refused_naming_it(
    places: Places,
) -> None:
    dead = holder("/srv/a/state.db")
    lease(NoKernelLocks(), places, dead).acquire()
    me = holder("/srv/b/state.db", pid=777)
    # Something in the way of the name the lock is moved aside to: every move fails.
    (Path(f"{places.lock}.stale-{me.token}") / "x").mkdir(parents=True)

    with pytest.raises(StorageLocked) as refused:
        lease(LocalFs(), places, me).acquire()  # the kernel says nobody holds it

    assert str(refused.value).startswith(f"Another relbot holds the storage {WHERE}: ")
    assert dead.describe() in str(refused.value)
    assert named(places) == dead


class Racing(LocalFs):
    """This machine's filesystem with another bot racing for the lock: ``on`` runs the other
    bot's step just before this bot's step of the same name."""

    def __init__(self, on: dict[str, object]) -> None:
        super().__init__()
        self.on = on

    def _other(self, step: str, path: str) -> None:
        act = self.on.get(step)
        if act is not None:
            act(path)  # type: ignore[operator]

    def rename(self, source: str, target: str) -> None:
        self._other("rename", source)
        super().rename(source, target)

    def read_small(self, path: str, limit: int) -> bytes | None:
        self._other("read_small", path)
        return super().read_small(path, limit)

    def create_small(self, path: str, data: bytes) -> bool:
        self._other("create_small", path)
        return super().create_small(path, data)


def test_a_lock_another_taker_moved_aside_first_is_tried_again_and_taken(places: Places) -> None:
    lease(NoKernelLocks(), places, holder("/srv/a/state.db")).acquire()
    me = holder("/srv/b/state.db", pid=777)
    # The other taker moved it aside (and dropped it) just before this bot's move.
    fs = Racing({"rename": lambda path: os.unlink(path)})

    lease(fs, places, me).acquire()

    assert named(places) == me


def test_a_lock_released_while_it_was_read_is_tried_again_and_taken(places: Places) -> None:
    lease(NoKernelLocks(), places, holder("/srv/a/state.db")).acquire()
    me = holder("/srv/b/state.db", pid=777)
    fs = Racing({"read_small": lambda path: os.unlink(path)})  # its holder stopped

    lease(fs, places, me).acquire()

    assert named(places) == me


def test_a_lock_that_changes_hands_at_every_try_is_given_up_after_three(
    places: Places,
) -> None:
    tries: list[str] = []
    other = holder("/srv/c/state.db", pid=999).to_bytes()

    def another_bot_takes_it(path: str) -> None:
        tries.append(path)
        if len(tries) <= 3:
            Path(path).write_bytes(other)

    def and_is_gone_again(path: str) -> None:
        Path(path).unlink(missing_ok=True)

    fs = Racing({"create_small": another_bot_takes_it, "read_small": and_is_gone_again})
    me = holder("/srv/b/state.db", pid=777)
    os.mkdir(places.work, 0o700)

    with pytest.raises(StorageLocked, match="Another relbot holds the storage"):
        lease(fs, places, me).acquire()
    assert len(tries) == 3


# -- the heartbeat, and giving the lock back --------------------------------------------------


def test_without_kernel_locks_a_holder_that_renews_is_not_taken_over(places: Places) -> None:
    clock = Clock(1000.0)
    held = lease(NoKernelLocks(), places, holder("/srv/a/state.db", beat=1000.0), clock)
    held.acquire()
    clock.now = 1200.0
    held.renew()  # a heartbeat

    other = holder("/srv/b/state.db", pid=777)
    with pytest.raises(StorageLocked, match="pid 4242"):
        lease(NoKernelLocks(), places, other, Clock(1450.0)).acquire()  # 250 s after it


def test_with_kernel_locks_a_holder_finding_another_bot_named_in_the_lock_takes_it_back(
    tmp_path: Path,
) -> None:
    staging, public = staging_and_public(tmp_path)
    first = LocalStorage(staging, public).lock(holder("/srv/a/state.db"))
    lock = tmp_path / ".relbot-public" / "lock"
    lock.write_bytes(holder("/srv/b/state.db", pid=777).to_bytes())  # no such bot runs

    first.renew()

    assert Holder.from_bytes(lock.read_bytes()) == first.holder
    first.release()


def test_without_kernel_locks_a_holder_whose_lock_was_taken_hears_who_has_it_and_where(
    places: Places,
) -> None:
    first = lease(NoKernelLocks(), places, holder("/srv/a/state.db"))
    first.acquire()
    lock_file(places).write_bytes(holder("/srv/b/state.db", pid=777).to_bytes())

    with pytest.raises(StorageLocked) as refused:
        first.renew()

    assert f"Another relbot holds the storage {WHERE}: relbot pid 777" in str(refused.value)


def test_a_holder_whose_lock_was_taken_leaves_the_new_holders_lock_when_it_stops(
    places: Places,
) -> None:
    first = lease(NoKernelLocks(), places, holder("/srv/a/state.db"))
    first.acquire()
    second = holder("/srv/b/state.db", pid=777)
    lock_file(places).write_bytes(second.to_bytes())

    first.release()

    assert named(places) == second


def test_a_holder_whose_lock_file_was_removed_stops_cleanly(places: Places) -> None:
    first = lease(NoKernelLocks(), places, holder("/srv/a/state.db"))
    first.acquire()
    lock_file(places).unlink()

    first.release()

    assert not lock_file(places).exists()


def test_a_lock_file_larger_than_any_relbot_writes_is_not_read(places: Places) -> None:
    first = lease(LocalFs(), places, holder("/srv/a/state.db"))
    first.acquire()
    padded = holder("/srv/b/state.db", pid=777).to_bytes().ljust(4097, b" ")
    lock_file(places).write_bytes(padded)

    with pytest.raises(StorageError, match="larger than 4,096 bytes"):
        first.renew()
    with pytest.raises(StorageError, match="larger than 4,096 bytes"):
        lease(LocalFs(), places, holder("/srv/c/state.db", pid=888)).acquire()
    lock_file(places).write_bytes(padded[:4096])
    first.renew()  # 4096 bytes are read: another bot named, the kernel says it is ours


# -- what a storage that cannot be written says -----------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "fs") as mount:
        yield mount


def remount(mount: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(mount)], check=True)


def test_a_read_only_storage_says_which_step_of_the_lock_failed(small_fs: Path) -> None:
    staging, public = small_fs / "staging", small_fs / "public"
    staging.mkdir()
    public.mkdir()
    lock = small_fs / ".relbot-public" / "lock"
    storage = LocalStorage(staging, public)
    storage.lock(holder("/srv/a/state.db")).release()
    remount(small_fs, "ro")
    with pytest.raises(StorageError, match=f"Cannot lock {lock}"):
        storage.lock(holder("/srv/a/state.db"))
    remount(small_fs, "rw")
    held = storage.lock(holder("/srv/a/state.db"))
    remount(small_fs, "ro")

    with pytest.raises(StorageError, match=f"Cannot renew the lock {lock}"):
        held.renew()
    with pytest.raises(StorageError, match=f"Cannot unlock {lock}"):
        held.release()

    remount(small_fs, "rw")
    held.release()


# -- the lease of a bot that started while the storage was unreachable ------------------------


def test_a_late_lease_never_taken_gives_back_nothing() -> None:
    def unreachable() -> StorageLease:
        raise AssertionError("not taken")

    LateLease(unreachable).release()


def test_a_late_lease_taken_at_a_renewal_is_given_back_when_the_bot_stops(
    tmp_path: Path,
) -> None:
    staging, public = staging_and_public(tmp_path)
    late = LateLease(lambda: LocalStorage(staging, public).lock(holder("/srv/a/state.db")))
    late.renew()

    late.release()

    assert not (tmp_path / ".relbot-public" / "lock").exists()
    LocalStorage(staging, public).lock(holder("/srv/b/state.db", pid=777)).release()


def test_the_lock_taken_once_staging_and_public_are_known_apart_names_this_bot(
    tmp_path: Path,
) -> None:
    staging, public = staging_and_public(tmp_path)
    me = holder("/srv/a/state.db")

    taken = lock_unless_overlapping(LocalStorage(staging, public), me)

    assert Holder.from_bytes((tmp_path / ".relbot-public" / "lock").read_bytes()) == me
    taken.release()
