"""A release team whose publish goes on past registration: the public site checked, the
python.org release page made public, the announcement posted on the forum, each against its
double on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.http_client import RetryPolicy
from bot.pydotorg.discourse import DiscourseClient
from bot.pydotorg.downloads import DownloadsCheck
from bot.pydotorg.registry import PydotorgRegistry
from bot.pydotorg.release_page import ReleasePageClient, v2_url
from tests.conftest import World
from tests.doubles.discourse import DiscourseDouble
from tests.doubles.downloads import PublicSite
from tests.doubles.pydotorg import PydotorgDouble

API_KEY = "v1-api-key-value"
TOKEN = "v2-token-value"
FORUM_KEY = "forum-key-value"
FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)
WORDS = "This is the first maintenance release of Python 3.14."


@dataclass
class Announcing:
    """The world and the services it announces to."""

    world: World
    api: PydotorgDouble
    forum: DiscourseDouble
    site: PublicSite

    def wire(self) -> None:
        """Connect the gate (again, after a restart) to every double."""
        conn, profile = self.world.conn, self.world.profile
        conn.registry = PydotorgRegistry(self.api.url, f"rm:{API_KEY}", profile, retry=FAST)
        conn.release_page = ReleasePageClient(v2_url(self.api.url), TOKEN, profile, retry=FAST)
        conn.forum = DiscourseClient(
            self.forum.url, FORUM_KEY, "hugo", category=23, tags=["release"], retry=FAST
        )
        conn.downloads = DownloadsCheck(self.site.url, retry=FAST)

    def restart(self) -> None:
        self.world.start()
        self.wire()


@pytest.fixture
def announcing(tmp_path: Path) -> Iterator[Announcing]:
    with (
        PydotorgDouble(users={"rm": (API_KEY, True)}, tokens={"rm": (TOKEN, True)}) as api,
        DiscourseDouble(users={"hugo": FORUM_KEY}) as forum,
        PublicSite(tmp_path / "data" / "public") as site,  # the World's public folder
    ):
        api.add_release("Python 3.14.0", published=True, latest=True)
        api.add_release("Python 3.14.1")
        extra = f"""
            [pydotorg]
            kind = "api"
            url = "{api.url}"
            release_page = true

            [downloads]
            url = "{site.url}"

            [discourse]
            url = "{forum.url}"
            username = "hugo"
        """
        setup = Announcing(World(tmp_path, extra), api, forum, site)
        setup.wire()
        yield setup
