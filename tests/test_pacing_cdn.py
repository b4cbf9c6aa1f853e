"""The one CDN purger of the process, shared by publishes that run at once, against the
python.org double's CDN stand-in (it records each PURGE) over loopback HTTP: purges go one
publish at a time, and a URL is sent once for two publishes only when the second asked for its
purge before the first sent it (after both changes)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bot.domain.tags import ReleaseTag
from bot.http_client import RetryPolicy
from bot.pydotorg.cdn import CdnPurger, PurgeReport
from bot.service.render import event_detail
from tests.conftest import World
from tests.doubles.pydotorg import PydotorgDouble

FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)
HOLD = 10.0  # seconds a held purge waits for the other at most (never in a pass)


class Hooked(httpx.BaseTransport):
    """Real HTTP, with an action run just before a request goes: ``before[path]`` for that
    path's first request, ``first`` for the very first one."""

    def __init__(self) -> None:
        self._http = httpx.HTTPTransport()
        self._lock = threading.Lock()
        self.before: dict[str, Callable[[], None]] = {}
        self.first: Callable[[], None] | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            act = self.before.pop(request.url.path, None)
            if self.first is not None:
                act, self.first = self.first, None
        if act is not None:
            act()
        return self._http.handle_request(request)

    def close(self) -> None:
        self._http.close()


class Said(logging.Handler):
    """The log records of ``logger`` that say ``words``: the tag each begins with (its
    ``at``-th word), and an event set once ``count`` were said."""

    def __init__(self, logger: str, words: str, at: int, count: int = 1) -> None:
        super().__init__(logging.INFO)
        self.logger, self.words, self.at, self.count = logger, words, at, count
        self.tags: list[str] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.words in message:
            self.tags.append(message.split()[self.at])
            if len(self.tags) >= self.count:
                self.seen.set()


@contextlib.contextmanager
def listening(caplog: pytest.LogCaptureFixture, said: Said) -> Iterator[Said]:
    caplog.set_level(logging.INFO, logger=said.logger)
    logger = logging.getLogger(said.logger)
    logger.addHandler(said)
    yield said
    logger.removeHandler(said)


@pytest.fixture
def waiting(caplog: pytest.LogCaptureFixture) -> Iterator[Said]:
    """Set when the purger logs that a purge waits for another's."""
    with listening(caplog, Said("bot.pydotorg.cdn", " waits for the purge of ", 3)) as said:
        yield said


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble() as double:
        yield double


def templates(api: PydotorgDouble) -> list[str]:
    """A release's page, the downloads page every release shares, and its files' folder."""
    base = api.base_url
    return [
        base + "downloads/release/python-{tag_nodots}/",
        base + "downloads/",
        base + "ftp/python/{version}/",
    ]


A, B = ReleaseTag.parse("3.14.2"), ReleaseTag.parse("3.13.11")
A_PATHS = ["/downloads/release/python-3142/", "/downloads/", "/ftp/python/3.14.2/"]
B_PATHS = ["/downloads/release/python-31311/", "/downloads/", "/ftp/python/3.13.11/"]


def purge_b_while_a_sends(
    purger: CdnPurger, hooked: Hooked, waiting: Said, path: str
) -> tuple[PurgeReport, PurgeReport]:
    """A's purge; just before A sends ``path``, B's purge is asked for (and waits)."""
    with ThreadPoolExecutor(1) as pool:
        futures = []

        def ask_for_b() -> None:
            futures.append(pool.submit(purger.purge, B))
            assert waiting.seen.wait(HOLD), "B's purge never waited for A's"

        hooked.before[path] = ask_for_b
        report_a = purger.purge(A)
        return report_a, futures[0].result(HOLD)


def test_a_shared_url_sent_after_the_second_purge_was_asked_for_is_sent_once(
    api: PydotorgDouble, waiting: Said
) -> None:
    hooked = Hooked()
    purger = CdnPurger(templates(api), transport=hooked, retry=FAST)

    report_a, report_b = purge_b_while_a_sends(purger, hooked, waiting, A_PATHS[0])

    # A's purge of /downloads/ went after B's change: B's purge need not send it again
    assert api.purges == [*A_PATHS, B_PATHS[0], B_PATHS[2]]  # one publish at a time
    assert report_a == PurgeReport(tuple(api.base_url + p[1:] for p in A_PATHS))
    assert report_b.already == (api.base_url + "downloads/",)
    assert report_b.purged == (api.base_url + B_PATHS[0][1:], api.base_url + B_PATHS[2][1:])
    assert waiting.tags == ["3.13.11"]


def test_a_shared_url_sent_before_the_second_purge_was_asked_for_is_sent_again(
    api: PydotorgDouble, waiting: Said
) -> None:
    hooked = Hooked()
    purger = CdnPurger(templates(api), transport=hooked, retry=FAST)

    # B is asked for after A sent /downloads/ (which may predate B's change)
    report_a, report_b = purge_b_while_a_sends(purger, hooked, waiting, A_PATHS[2])

    assert api.purges == A_PATHS + B_PATHS
    assert report_a.already == report_b.already == ()
    assert len(report_b.purged) == 3


def test_purges_one_after_the_other_send_every_url(api: PydotorgDouble) -> None:
    purger = CdnPurger(templates(api), retry=FAST)
    assert purger.purge(A).already == purger.purge(B).already == ()
    assert api.purges == A_PATHS + B_PATHS


def test_a_url_whose_purge_failed_is_sent_by_the_next_publish(
    api: PydotorgDouble, waiting: Said
) -> None:
    hooked = Hooked()
    purger = CdnPurger(templates(api), transport=hooked, retry=FAST)
    api.fail("purge", nth=2, status=503, times=2)  # A's /downloads/, both attempts

    report_a, report_b = purge_b_while_a_sends(purger, hooked, waiting, A_PATHS[0])

    assert [f.url for f in report_a.failed] == [api.base_url + "downloads/"]
    assert report_b.already == () and report_b.ok
    assert api.purges.count("/downloads/") == 1  # B's: A's were answered 503


def test_five_publishes_purging_at_once_never_interleave(api: PydotorgDouble) -> None:
    base = api.base_url
    purger = CdnPurger(
        [base + "release/{tag}/page/", base + "downloads/", base + "release/{tag}/files/"],
        retry=FAST,
    )
    tags = [ReleaseTag.parse(t) for t in ("3.15.1", "3.14.2", "3.13.11", "3.12.13", "3.11.15")]
    start = threading.Barrier(len(tags))

    def purge(tag: ReleaseTag) -> PurgeReport:
        start.wait(HOLD)
        return purger.purge(tag)

    with ThreadPoolExecutor(len(tags)) as pool:
        reports = list(pool.map(purge, tags))

    own = [p for p in api.purges if p != "/downloads/"]
    pairs = [own[i : i + 2] for i in range(0, len(own), 2)]
    assert sorted(pairs) == sorted([f"/release/{t}/page/", f"/release/{t}/files/"] for t in tags)
    assert all(len(r.purged) + len(r.already) == 3 and r.ok for r in reports)
    assert api.purges.count("/downloads/") == sum(not r.already for r in reports) >= 1


# -- the purge step of two publishes confirmed at once -----------------------------------------


@pytest.fixture
def asking(caplog: pytest.LogCaptureFixture) -> Iterator[Said]:
    """Set once two purge steps asked for their purge; their tags, in order."""
    steps = Said("bot.service.pipeline.steps", " asks for its CDN purge ", 0, count=2)
    with listening(caplog, steps) as said:
        yield said


async def test_the_purge_step_says_what_another_publish_already_purged(
    world: World, api: PydotorgDouble, asking: Said
) -> None:
    """3.14.0rc1 and 3.14.0rc2 are confirmed together; the second to reach its purge asks
    for it while the first is purging (held at its first URL until then), and waits for its
    turn without holding a worker thread. The URLs they share (the downloads pages, the
    3.14.0 folder and its docs) are sent once, and the second's purge step says so in the
    audit."""
    rebased = [
        t.replace("https://www.python.org/", api.base_url).replace(
            "https://docs.python.org/", api.base_url + "docs/"
        )
        for t in world.profile.spec.pydotorg["purge"]
    ]
    hooked = Hooked()
    world.conn.purger = purger = CdnPurger(rebased, transport=hooked, retry=FAST)

    def hold_the_first() -> None:
        assert asking.seen.wait(HOLD), "the second purge was never asked for"

    hooked.first = hold_the_first
    tags = ("3.14.0rc1", "3.14.0rc2")
    for tag in tags:
        world.stage(tag)
        await world.ready_all(tag)
    lines = [await world.plan(tag) for tag in tags]

    replies = await asyncio.gather(*(world.say("hugo", line) for line in lines))

    assert all("Published" in r.text for r in replies), [r.text for r in replies]
    first, second = asking.tags
    urls = {t: purger.urls(ReleaseTag.parse(t)) for t in tags}
    shared = [u for u in urls[second] if u in urls[first]]
    assert len(shared) == 5, shared
    detail = {t: [event_detail(e) for e in world.store.events(ReleaseTag.parse(t))] for t in tags}
    assert f"purge: {len(urls[first])} URLs purged, 0 failed" in detail[first]
    assert (
        f"purge: {len(urls[second]) - 5} URLs purged, 5 already purged by another publish, 0 failed"
    ) in detail[second]
    assert len(api.purges) == len(urls[first]) + len(urls[second]) - 5
