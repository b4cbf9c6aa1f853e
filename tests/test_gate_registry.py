"""Registration on python.org as steps of the publish pipeline, against the API double."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.demo import stage_demo
from bot.domain.history import EventKind
from bot.domain.profile import load_profile
from bot.http_client import RetryPolicy
from bot.ports.messages import ChannelKind
from bot.pydotorg.registry import PydotorgRegistry
from bot.service.pipeline.steps import PIPELINE
from tests.conftest import World
from tests.console_driver import publish_through_console
from tests.doubles.pydotorg import PydotorgDouble
from tests.pinned import NO_SIGNATURES

KEY = "s3cr3t-api-key-value"
FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        yield double


def registered_world(tmp_path: Path, api: PydotorgDouble) -> World:
    world = World(tmp_path)
    world.conn.registry = PydotorgRegistry(
        api.url, f"rm:{KEY}", world.profile, auth_source="PYDOTORG_AUTH", retry=FAST
    )
    return world


async def test_publish_registers_every_file_on_python_org(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    world = registered_world(tmp_path, api)
    world.stage("3.14.1")
    world.write("3.14.1", "Python-3.14.1.tgz.sigstore", "{}")
    await world.ready_all("3.14.1")
    reply = await world.say("hugo", await world.plan("3.14.1"))
    assert not reply.private, reply.text
    records = {r["name"]: r for r in api.files("Python 3.14.1")}
    assert len(records) == 12  # source 4, windows 7, macos 1; docs are not registered
    tgz = records["Gzipped source tarball"]
    assert tgz["url"] == "https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tgz"
    assert tgz["sigstore_bundle_file"] == tgz["url"] + ".sigstore"
    announcement = world.chat.texts(ChannelKind.ANNOUNCEMENT)[0]
    assert "https://www.python.org/downloads/release/python-3141/" in announcement


async def test_a_missing_release_is_refused_before_anything_is_public(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    world = registered_world(tmp_path, api)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    reply = await world.say("hugo", "/publish 3.14.1")
    assert reply.private
    assert "create the release 'Python 3.14.1' in the python.org admin first" in reply.text
    assert world.public_files() == set()


async def test_registration_failing_midway_resumes_and_completes_exactly_once(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    world = registered_world(tmp_path, api)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    api.fail("create", nth=5, status=500, times=10)
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text
    assert len(world.public_files()) == 19  # promotion is done and stays done
    assert any("stopped at register" in n for n in world.chat.texts(ChannelKind.NOTICE))
    assert 0 < len(api.files("Python 3.14.1")) < 12

    api.faults.clear()
    world.start()  # a restart, then the next scan resumes the journal
    world.conn.registry = PydotorgRegistry(api.url, f"rm:{KEY}", world.profile, retry=FAST)
    await world.gate.scan()
    assert len(api.files("Python 3.14.1")) == 12
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert world.events("3.14.1", EventKind.STEP_DONE).count("step-done") == len(PIPELINE)
    assert len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 1
    assert 0 not in api.counts_after_writes("Python 3.14.1")


def test_console_rehearsal_registers_every_file_and_never_shows_the_key(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    (tmp_path / "relbot.toml").write_text(
        textwrap.dedent(f"""
        [pydotorg]
        kind = "api"
        url = "{api.url}"
        auth_env = "RELBOT_TEST_PYDOTORG"

        [cdn]
        purge = ["{api.base_url}downloads/", "{api.base_url}ftp/python/{{version}}/"]

        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs", "windows", "macos"]
        """)
        + NO_SIGNATURES
    )
    staging = tmp_path / "relbot-data" / "staging" / "3.14.1"
    stage_demo(staging.parent, load_profile("cpython"))
    (tmp_path / "relbot-data" / "public").mkdir()  # `relbot run` creates no folder
    lines = [f"/ready {role} 3.14.1" for role in ("source", "docs", "windows", "macos")]
    session = publish_through_console(
        tmp_path,
        [*lines, "/publish 3.14.1"],
        "3.14.1",
        env={"RELBOT_TEST_PYDOTORG": f"rm:{KEY}"},
        args=["--log-level", "debug"],
    )
    assert session.returncode == 0, session.stderr
    assert "Published 3.14.1" in session.after_confirm
    assert len(api.files("Python 3.14.1")) == 12
    assert api.purges == ["/downloads/", "/ftp/python/3.14.1/"]
    everything = session.before_confirm + session.after_confirm + session.stderr
    assert "DEBUG" in session.stderr and KEY not in everything


async def test_a_registry_outage_is_told_once_while_the_publish_keeps_retrying(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    world = registered_world(tmp_path, api)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    api.fail("create", nth=1, status=503, times=1000)
    await world.say("hugo", line)
    for _ in range(3):
        await world.gate.scan()
    stopped = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at register" in n]
    assert len(stopped) == 1, stopped
    api.faults.clear()
    await world.gate.scan()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]


async def test_a_file_python_org_cannot_record_is_refused_at_publish_with_nothing_public(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    """A name past python.org's 200-character URL column would be answered with a 500 after
    the files are out: /publish refuses the plan instead, naming the file."""
    api.add_release("Python 3.14.1")
    world = registered_world(tmp_path, api)
    world.stage("3.14.1")
    (world.staging / "3.14.1" / "python-3.14.1.exe").unlink()  # this build comes renamed
    long_name = "python-3.14.1-" + "x" * 180 + ".exe"  # the 32-bit installer, by its rule
    world.write("3.14.1", long_name, "the 32-bit installer")
    for path in ("python-3.14.1.exe", long_name):
        waived = await world.say("hugo", f"/waive 3.14.1 {path} renamed build")
        assert not waived.private, waived.text
    await world.ready_all("3.14.1")

    refused = await world.say("hugo", "/publish 3.14.1")

    assert refused.private and refused.confirm is None, refused.text
    assert f"python.org: the python.org url of 3.14.1/{long_name} would be" in refused.text
    assert "200 at most" in refused.text and ".." not in refused.text
    assert world.public_files() == set()
    assert api.files("Python 3.14.1") == []


async def test_two_files_python_org_would_record_alike_are_refused_at_publish(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    """python.org keeps slugs unique and answers a second one with a 500: caught in the plan."""
    api.add_release("Python 3.14.1")
    world = registered_world(tmp_path, api)
    world.stage("3.14.1")
    extra = "python-3.14.1-extra.exe"
    world.write("3.14.1", extra, "another 32-bit installer")
    await world.ready_all("3.14.1")
    assert not (await world.say("hugo", f"/waive 3.14.1 {extra} an extra build")).private

    refused = await world.say("hugo", "/publish 3.14.1")

    assert refused.private and refused.confirm is None, refused.text
    assert "would get the same python.org slug" in refused.text and ".." not in refused.text
    assert world.public_files() == set()


async def test_a_rate_limit_wait_during_registration_is_told_to_the_channel_once(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    world = registered_world(tmp_path, api)
    api.fail("create", nth=3, status=429, times=1, retry_after=0)  # python.org: wait
    world.stage("3.14.1")
    await world.ready_all("3.14.1")

    reply = await world.say("hugo", await world.plan("3.14.1"))
    await asyncio.sleep(0)  # the notice was handed over from the registration's thread

    assert not reply.private, reply.text
    told = [n for n in world.chat.texts(ChannelKind.NOTICE) if "rate limiting" in n]
    assert told == [
        "python.org is rate limiting API user 'rm': the registration waits 0 s as python.org "
        "asks, then goes on."
    ], told
    assert len(api.files("Python 3.14.1")) == 12
