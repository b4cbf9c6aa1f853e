"""python.org answering other flags than the bot set on a release page: a page it did not make
public (or not as a prerelease, or not latest) stops the publish before the post and the
announcement link it, and any other release whose is_latest changed meanwhile is told, whatever
kind of release was made public."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.domain.history import EventKind
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError
from bot.ports.messages import ChannelKind
from bot.pydotorg.release_page import ReleasePageClient, v2_url
from tests.announcing.conftest import API_KEY, FAST, FORUM_KEY, TOKEN, WORDS, Announcing
from tests.conftest import World
from tests.doubles.discourse import DiscourseDouble
from tests.doubles.downloads import PublicSite
from tests.doubles.pydotorg import PydotorgDouble

PROFILE = load_profile("cpython")


class KeepsFlagsBack(PydotorgDouble):
    """A python.org whose save puts some flags of some releases back (a signal, a model's
    ``save()``): ``kept[name]`` are the flags release ``name`` always has after a save. Its
    answer to the PATCH shows what it kept, as Django REST framework's does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kept: dict[str, dict[str, bool]] = {}

    def _saved(self, pk: int) -> None:
        super()._saved(pk)
        self.releases[pk].update(self.kept.get(str(self.releases[pk]["name"]), {}))


@pytest.fixture
def api() -> Iterator[KeepsFlagsBack]:
    double = KeepsFlagsBack(tokens={"rm": (TOKEN, True)})
    with double:
        double.add_release("Python 3.13.9", published=True)
        double.add_release("Python 3.14.0", published=True, latest=True)
        yield double


def client(api: PydotorgDouble) -> ReleasePageClient:
    return ReleasePageClient(
        v2_url(api.url), TOKEN, PROFILE, token_source="PYDOTORG_TOKEN", retry=FAST
    )


@pytest.mark.parametrize(
    ("tag", "kept"),
    [
        ("3.14.1", {"is_published": False}),  # the page stays hidden
        ("3.14.1", {"is_latest": False}),  # the newest final, not latest
        ("3.15.0b2", {"pre_release": False}),  # a beta shown as a final
    ],
)
def test_a_page_python_org_did_not_keep_as_set_is_an_error_not_a_report(
    api: KeepsFlagsBack, tag: str, kept: dict[str, bool]
) -> None:
    name = f"Python {tag}"
    api.add_release(name)
    api.kept[name] = kept

    with pytest.raises(RegistryError) as caught:
        client(api).publish(ReleaseTag.parse(tag))

    assert str(caught.value).startswith(f"python.org did not keep the flags set on '{name}' (")
    assert str(caught.value).endswith("); check the release in the admin.")


@pytest.mark.parametrize(
    "tag",
    [
        "3.13.10",  # a security (older series) final: never latest
        "3.15.0b2",  # a prerelease: never latest
    ],
)
def test_the_latest_cleared_while_a_release_that_is_not_latest_is_made_public_is_told(
    api: KeepsFlagsBack, tag: str
) -> None:
    api.add_release(f"Python {tag}")
    # python.org (or an admin at work) clears 3.14.0's is_latest during the change: nothing
    # made public now should have done that.
    api.after_write = lambda: api.set_latest("Python 3.14.0", False)

    report = client(api).publish(ReleaseTag.parse(tag))

    assert not report.is_latest
    assert report.unexpected == ("Python 3.14.0",) and report.demoted == ()
    assert api.latest() == []


# -- the same, through the publish -----------------------------------------------------------


@pytest.fixture
def announcing(tmp_path: Path) -> Iterator[Announcing]:
    """tests/announcing/conftest.py's team, with a python.org that may keep flags back."""
    with (
        KeepsFlagsBack(users={"rm": (API_KEY, True)}, tokens={"rm": (TOKEN, True)}) as api,
        DiscourseDouble(users={"hugo": FORUM_KEY}) as forum,
        PublicSite(tmp_path / "data" / "public") as site,
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


async def test_a_page_python_org_kept_hidden_stops_the_publish_before_the_post(
    announcing: Announcing,
) -> None:
    a, world = announcing, announcing.world
    assert isinstance(a.api, KeepsFlagsBack)
    a.api.kept["Python 3.14.1"] = {"is_published": False}
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    assert not (await world.say("hugo", f"/announce 3.14.1 {WORDS}")).private

    stopped = await world.say("hugo", await world.plan("3.14.1"))

    assert stopped.private and "did not finish" in stopped.text, stopped.text
    notices = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at release-page" in n]
    assert len(notices) == 1 and "did not keep the flags set on 'Python 3.14.1'" in notices[0]
    steps = world.store.release(ReleaseTag.parse("3.14.1")).steps_done
    assert "release-page" not in steps
    assert a.forum.topics == [] and world.chat.texts(ChannelKind.ANNOUNCEMENT) == []
    assert world.events("3.14.1", EventKind.PUBLISHED) == []

    a.api.kept.clear()  # the admin fixes python.org; the next scan finishes the publish
    await world.gate.scan()
    assert a.api.release("Python 3.14.1")["is_published"] is True
    assert len(a.forum.topics) == 1 and len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 1
