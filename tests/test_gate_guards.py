"""Guards of the gate that a one-line slip would remove without any other test noticing:
nothing changes a release while it is being published, and a replaced signature bundle is
read again."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.http_client import RetryPolicy
from bot.pydotorg.registry import PydotorgRegistry
from tests.conftest import World
from tests.doubles.pydotorg import PydotorgDouble
from tests.test_gate_signatures import ARTIFACT, BUNDLE, DATA, sign_all, signed_world

TAG = ReleaseTag.parse("3.14.1")
KEY = "guard-api-key"


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        yield double


async def stuck_publish(world: World, api: PydotorgDouble) -> None:
    """Confirm a publish of 3.14.1 that cannot finish: python.org refuses every write."""
    api.add_release("Python 3.14.1")
    fast = RetryPolicy(attempts=1, sleep=lambda _: None)
    world.conn.registry = PydotorgRegistry(api.url, f"rm:{KEY}", world.profile, retry=fast)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    api.fail("create", status=503, times=10_000)
    reply = await world.say("hugo", line)
    assert reply.private, reply.text
    assert world.store.release(TAG).publishing is not None


@pytest.mark.parametrize(
    ("person", "line"),
    [
        ("ned", "/ready macos 3.14.1"),
        ("hugo", "/publish 3.14.1"),
        ("ned", "/unready macos 3.14.1"),
        ("hugo", "/unready windows 3.14.1"),
        ("hugo", "/respin 3.14.1"),
        ("hugo", "/waive 3.14.1 macos the pkg is broken"),
    ],
)
async def test_a_release_being_published_takes_no_command_that_changes_it(
    tmp_path: Path, api: PydotorgDouble, person: str, line: str
) -> None:
    world = World(tmp_path)
    await stuck_publish(world, api)
    world.stage("3.14.1")  # the same files staged again: nothing else stands in the way
    before = world.store.release(TAG)
    events = world.events("3.14.1")

    reply = await world.say(person, line)

    assert reply.private, reply.text
    assert reply.confirm is None
    assert "3.14.1" in reply.text
    after = world.store.release(TAG)
    assert (after.claims, after.offer, after.publishing) == (
        before.claims,
        before.offer,
        before.publishing,
    )
    assert world.events("3.14.1") == events  # a refusal is logged, never journaled


# -- signature bundles -----------------------------------------------------------------------

PKG = "python-3.14.1-macos11.pkg"
OLD_FORMAT = (DATA / "Python-3.12.5.tgz.sigstore").read_bytes()  # a v0.1 bundle


async def signed_and_checked(tmp_path: Path) -> World:
    world = signed_world(tmp_path)
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    status = await world.say("eve", "/status 3.14.1")
    signed = [p for p in paths if world.profile.needs_signature(TAG, p)]
    assert PKG in signed
    assert f"signatures: {len(signed)} of {len(signed)} files signed and valid" in status.text
    return world


async def test_a_bundle_replaced_by_one_of_another_size_is_read_again(tmp_path: Path) -> None:
    world = await signed_and_checked(tmp_path)
    bundle = world.staging / "3.14.1" / (PKG + ".sigstore")
    stat = bundle.stat()
    assert len(OLD_FORMAT) != stat.st_size
    bundle.write_bytes(OLD_FORMAT)
    os.utime(bundle, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: only size moved

    status = await world.say("eve", "/status 3.14.1")

    assert f"{PKG}: too-old bundle format" in status.text


async def test_a_bundle_replaced_by_one_of_the_same_size_is_read_again(tmp_path: Path) -> None:
    world = await signed_and_checked(tmp_path)
    bundle = world.staging / "3.14.1" / (PKG + ".sigstore")
    stat = bundle.stat()
    broken = BUNDLE.replace(b"{", b"[", 1)  # same size, no longer a bundle
    assert len(broken) == stat.st_size and broken != BUNDLE
    bundle.write_bytes(broken)
    os.utime(bundle, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    status = await world.say("eve", "/status 3.14.1")

    assert "signatures: 11 of 12 files signed and valid" in status.text
    assert f"{PKG}: malformed bundle" in status.text, status.text
