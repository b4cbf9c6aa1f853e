"""The install index after the swap: never registered on python.org, purged from the CDN with
its catalog and their folder, as the Windows pipeline purges them today."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.http_client import RetryPolicy
from bot.pydotorg.cdn import CdnPurger
from bot.pydotorg.registry import PydotorgRegistry
from tests.conftest import World
from tests.doubles.pydotorg import PydotorgDouble
from tests.windows_index_data import LIVE_VERSIONS, index_bytes, stage_windows_index

KEY = "s3cr3t-api-key-value"
FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        yield double


def connected_world(tmp_path: Path, api: PydotorgDouble) -> World:
    world = World(tmp_path)
    world.conn.registry = PydotorgRegistry(
        api.url, f"rm:{KEY}", world.profile, auth_source="PYDOTORG_AUTH", retry=FAST
    )
    templates = [
        t.replace("https://www.python.org/", api.base_url).replace(
            "https://docs.python.org/", api.base_url + "docs/"
        )
        for t in world.profile.spec.pydotorg["purge"]
    ]
    world.conn.purger = CdnPurger(templates, files_url=api.base_url + "ftp/python/", retry=FAST)
    return world


async def test_a_replaced_index_is_purged_with_its_catalog_and_folder_never_registered(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    world = connected_world(tmp_path, api)
    world.public.mkdir(parents=True)
    (world.public / "index-windows.json").write_bytes(index_bytes(*LIVE_VERSIONS))
    world.stage("3.14.1")
    stage_windows_index(world.staging / "3.14.1", "3.14.1", *LIVE_VERSIONS)
    await world.ready_all("3.14.1")
    reply = await world.say("hugo", await world.plan("3.14.1"))
    assert not reply.private, reply.text
    assert {"/ftp/python/index-windows.json", "/ftp/python/index-windows.json.cat"} <= set(
        api.purges
    )
    assert "/ftp/python/" in api.purges
    urls = [r["url"] for r in api.files("Python 3.14.1")]
    assert len(urls) == 12 and not any("index-windows" in u for u in urls)


async def test_without_an_index_nothing_of_it_is_purged(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    world = connected_world(tmp_path, api)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    reply = await world.say("hugo", await world.plan("3.14.1"))
    assert not reply.private, reply.text
    assert not any("index-windows" in p for p in api.purges)
    assert "/ftp/python/" not in api.purges
    assert len(api.purges) == 18
