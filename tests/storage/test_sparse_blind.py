"""Over a real OpenSSH server: a file that cannot be the artifact blinds nothing. The listing
(SFTP attributes) gives sizes, so a file larger than the profile allows and a 50 MB bundle
are named from it; a sparse file under the limit is found by the server's ``stat`` before
anything is hashed, and named as its role's one problem."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.errors import SparseFile
from bot.storage.sftp import SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage
from tests.storage.test_gate_over_sftp import sftp_world
from tests.test_staging_stall import BUNDLE, REDO, ROLES, TAG, TARBALL, role_lines, sparse


async def test_a_sparse_100_gb_tarball_over_sftp_is_named_once_and_hides_nothing(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    world.stage(TAG)
    sparse(world.staging / TAG / TARBALL, "100G")
    sparse(world.staging / TAG / BUNDLE, "50M")

    await asyncio.wait_for(world.gate.scan(), 60)
    status = await asyncio.wait_for(world.say("eve", f"/status {TAG}"), 60)
    ready = await asyncio.wait_for(world.say("hugo", f"/ready source {TAG}"), 60)
    windows = await asyncio.wait_for(world.say("steve", f"/ready windows {TAG}"), 60)

    too_big = f"{TARBALL} (107.4 GB, more than the 4.3 GB such a file may be; {REDO})"
    no_bundle = f"{BUNDLE} (52.4 MB, more than the 1.0 MB such a file may be; {REDO})"
    for named, path in ((too_big, TARBALL), (no_bundle, BUNDLE)):
        assert status.text.count(path) == 1 and named in status.text, status.text
        assert named in ready.text
    assert role_lines(status.text) == list(ROLES)
    assert ready.private and not windows.private, windows.text
    assert world.gate.metrics.scan_failures == 0


async def test_a_sparse_file_under_the_limit_is_found_by_the_server_before_it_is_hashed(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    # The server's look at the file, however long a busy machine makes it, answers /ready
    # itself: not "Checking 3 files… takes a while" after the usual 2 s.
    world.gate.hashes.patience = 30
    world.stage(TAG)
    sparse(world.staging / TAG / TARBALL, "3G")

    ready = await asyncio.wait_for(world.say("hugo", f"/ready source {TAG}"), 60)
    status = await asyncio.wait_for(world.say("eve", f"/status {TAG}"), 60)

    named = f"{TARBALL} (3.2 GB on paper but 0 bytes on disk: a sparse file, not an upload; {REDO})"
    assert ready.private and named in ready.text, ready.text
    assert status.text.count(TARBALL) == 1 and named in status.text, status.text
    assert role_lines(status.text) == list(ROLES)
    assert world.events(TAG, EventKind.CLAIMED) == []


def test_the_server_refuses_to_hash_a_sparse_file_naming_it(
    tmp_path: Path, sshd: SshServer
) -> None:
    staging = tmp_path / "staging"
    (staging / TAG).mkdir(parents=True)
    storage: SftpStorage = sftp_storage(sshd, staging, tmp_path / "public")
    sparse(staging / TAG / TARBALL, "3G")
    (staging / TAG / "Python-3.14.1.tgz").write_bytes(b"dense")
    try:
        try:
            storage.digest(ReleaseTag.parse(TAG), ["Python-3.14.1.tgz", TARBALL])
        except SparseFile as err:
            refused = err
        else:
            raise AssertionError("a sparse file was hashed")
    finally:
        storage.close()
    assert refused.path.endswith(f"/{TAG}/{TARBALL}")
    assert (refused.size, refused.allocated) == (3 << 30, 0)
