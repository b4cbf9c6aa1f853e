"""Published bytes belong to the bot, tried from outside with a real uploader account (not
root, writing into staging as uploaders do), on local folders and over SFTP against the real
sshd: after "Published" the uploader can change no public byte, by path, by a handle opened
before the confirmation, or from a working folder inside staging."""

from __future__ import annotations

import grp
import os
import stat
import subprocess
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.ports.messages import ChannelKind
from tests.conftest import World
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage
from tests.uploader import Uploader

TGZ = "Python-3.14.1.tgz"
PKG = "python-3.14.1-macos11.pkg"


def team_on(root: Path, who: Uploader, kind: str, request: pytest.FixtureRequest) -> World:
    """The release team on ``root``: staging is the uploaders' (their account owns it);
    public and the bot's work folder are the bot's. Over SFTP the bot logs in to the test
    sshd, and published files get the uploaders' group, as on python.org."""
    world = World(root)
    world.staging.mkdir(parents=True, exist_ok=True)
    world.public.mkdir(parents=True, exist_ok=True)
    os.chown(world.staging, who.uid, who.gid)
    if kind == "sftp":
        server: SshServer = request.getfixturevalue("sshd")
        group = grp.getgrgid(who.gid).gr_name
        world.storage = sftp_storage(server, world.staging, world.public, group=group)  # type: ignore[assignment]
        world.start()
    return world


def stage_as(who: Uploader, world: World, tag: str) -> dict[str, bytes]:
    """Every file of ``tag``, uploaded by the uploader (its files, its folders)."""
    paths = world.stage(tag)
    subprocess.run(["chown", "-R", f"{who.uid}:{who.gid}", str(world.staging / tag)], check=True)
    return {p: (world.staging / tag / p).read_bytes() for p in paths}


def public_bytes(world: World) -> dict[str, bytes]:
    return {p: (world.public / p).read_bytes() for p in world.public_files()}


@pytest.mark.parametrize("kind", ["local", "sftp"])
async def test_after_published_the_uploader_can_change_no_public_byte_by_path(
    shared_root: Path, uploader: Uploader, kind: str, request: pytest.FixtureRequest
) -> None:
    world = team_on(shared_root, uploader, kind, request)
    staged = stage_as(uploader, world, "3.14.1")
    await world.ready_all("3.14.1")
    done = await world.say("hugo", await world.plan("3.14.1"))
    assert "Published 3.14.1" in done.text, done.text
    published = public_bytes(world)
    assert len(published) == len(staged)

    for path in [world.public / "3.14.1", *(world.public / "3.14.1").rglob("*")]:
        st = path.lstat()
        assert st.st_uid == os.getuid(), path  # the bot's, never the uploader's
        assert stat.S_IMODE(st.st_mode) == (0o755 if path.is_dir() else 0o444), path
    tgz = world.public / "3.14.1" / TGZ
    if kind == "local":
        attempts = [
            f"printf EVIL > {tgz}",
            f"printf EVIL >> {tgz}",
            f"touch {world.public / '3.14.1' / 'added.txt'}",
            f"chmod 666 {tgz}",
            f"mv {world.public / '3.14.1'} {world.public / 'mine'}",
        ]
        for attempt in attempts:
            result = uploader.run(attempt)
            assert result.returncode != 0, f"the uploader could: {attempt}"
    else:
        with uploader.sftp(request.getfixturevalue("sshd")) as sftp:
            for name, mode in ((str(tgz), "w"), (str(tgz), "a"), (f"{tgz.parent}/added.txt", "w")):
                with pytest.raises(PermissionError):
                    sftp.open(name, mode).close()
            with pytest.raises(PermissionError):
                sftp.chmod(str(tgz), 0o666)
            with pytest.raises(OSError):
                sftp.rename(str(tgz.parent), str(world.public / "mine"))
    assert (
        public_bytes(world)
        == published
        == {
            f"3.14.1/{p}" if not p.startswith("docs/") else f"doc/3.14.1/{p[5:]}": c
            for p, c in staged.items()
        }
    )


async def test_a_handle_or_a_working_folder_from_before_the_confirmation_change_nothing_public(
    shared_root: Path, uploader: Uploader, request: pytest.FixtureRequest
) -> None:
    world = team_on(shared_root, uploader, "local", request)
    staged = stage_as(uploader, world, "3.14.1")
    release = world.staging / "3.14.1"
    # Before the confirmation: a shell sitting in the release's staging folder, holding the
    # tarball open for writing (as an upload tool that never closed it).
    shell = uploader.start(
        f"exec 3>>{TGZ}; echo ready; read go; printf EVIL >&3; "
        f"printf EVIL > {PKG}; printf new > added.txt; echo done",
        cwd=release,
    )
    assert shell.stdout is not None and shell.stdin is not None
    assert shell.stdout.readline().strip() == "ready"
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    blocker = world.public / "3.14.1"
    blocker.write_text("a file where the release's folder goes")  # the publish waits
    stopped = await world.say("hugo", line)
    assert stopped.private and "did not finish" in stopped.text

    shell.stdin.write("go\n")  # after the confirmation, while the publish waits
    shell.stdin.flush()
    assert shell.stdout.readline().strip() == "done"
    shell.wait(timeout=30)
    blocker.unlink()
    await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert (world.public / "3.14.1" / TGZ).read_bytes() == staged[TGZ]
    assert (world.public / "3.14.1" / PKG).read_bytes() == staged[PKG]
    assert "3.14.1/added.txt" not in world.public_files()
    # The uploader's newer bytes are never lost: left in staging, and named in the channel.
    assert (release / TGZ).read_bytes() == staged[TGZ] + b"EVIL"
    assert (release / PKG).read_bytes() == b"EVIL"
    assert (release / "added.txt").read_bytes() == b"new"
    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "left for their uploaders" in n]
    assert TGZ in told and PKG in told
    unchanged = set(staged) - {TGZ, PKG}
    assert not any((release / p).exists() for p in unchanged)  # removed once public


async def test_over_sftp_a_handle_and_a_session_in_staging_from_before_change_nothing_public(
    shared_root: Path, uploader: Uploader, request: pytest.FixtureRequest
) -> None:
    world = team_on(shared_root, uploader, "sftp", request)
    staged = stage_as(uploader, world, "3.14.1")
    release = world.staging / "3.14.1"
    with uploader.sftp(request.getfixturevalue("sshd")) as sftp:
        sftp.chdir(str(release))  # the uploader's session sits in the staging folder
        handle = sftp.open(TGZ, "a")  # and holds the tarball open for writing
        await world.ready_all("3.14.1")
        line = await world.plan("3.14.1")
        blocker = world.public / "3.14.1"
        blocker.write_text("a file where the release's folder goes")
        stopped = await world.say("hugo", line)
        assert stopped.private and "did not finish" in stopped.text

        handle.write(b"EVIL")
        handle.close()
        with sftp.open(PKG, "w") as f:
            f.write(b"EVIL")
        blocker.unlink()
        await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert (world.public / "3.14.1" / TGZ).read_bytes() == staged[TGZ]
    assert (world.public / "3.14.1" / PKG).read_bytes() == staged[PKG]
    assert (release / TGZ).read_bytes() == staged[TGZ] + b"EVIL"  # left, and named
    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "left for their uploaders" in n]
    assert TGZ in told and PKG in told
    unchanged = set(staged) - {TGZ, PKG}
    assert not any((release / p).exists() for p in unchanged)  # removed once public
