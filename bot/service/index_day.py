"""The install index on a day of several releases: which other releases a release's staged
index is judged with (see :func:`bot.domain.windows_index.judge_index`), and the notice
that tells the index's role that an index it staged is refused now (another release made a
new index live, or a shared one changed): at once after a publish made a new index live,
else at the scan that sees it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from bot.domain.files import Listing
from bot.domain.history import ReleaseState
from bot.domain.readiness import Readiness
from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import INDEX_STEP
from bot.errors import StorageError
from bot.service.observer import Observer
from bot.service.reporter import Reporter
from bot.service.windows_index import IndexCheck, IndexInspector, Neighbour


async def judged(
    observer: Observer, readiness: Readiness, listing: Listing, tell: Reporter | None = None
) -> Readiness:
    """``readiness`` with the verdict on its staged install index, judged afresh with the
    other releases of its role (at /publish); with ``tell`` (a scan), judged as cached, and
    an index refused since the last look is told to its role at once."""
    before = observer.sight(readiness.tag).index
    readiness = await observer.check_index(readiness, listing, fresh=tell is None)
    if tell is not None:
        await tell_refused(tell, observer.index, before, readiness)
    return readiness


def wire(
    observer: Observer,
    tags: Callable[[], Iterable[ReleaseTag]],
    state_of: Callable[[ReleaseTag], ReleaseState],
) -> None:
    """Have ``observer`` judge each staged index with the releases of ``tags()`` (the state
    file's) and those it listed, in their states as ``state_of`` reads them."""
    observer.neighbours_of = lambda tag: neighbours(
        tag,
        (*tags(), *observer.listed_tags()),
        state_of,
        observer.last_listing_seen,
        observer.index,
    )


def neighbours(
    tag: ReleaseTag,
    tags: Iterable[ReleaseTag],
    state_of: Callable[[ReleaseTag], ReleaseState],
    listing_of: Callable[[ReleaseTag], Listing | None],
    index: IndexInspector | None,
) -> list[Neighbour]:
    """The other releases of the install index's role (among ``tags``) that its verdict on
    ``tag`` needs (none without an index): open ones as last listed (or to be listed),
    those publishing with their plan, and published ones whose index step left the index
    to a shared one. No I/O but the state file's."""
    if index is None or not index.takes_part(tag):
        return []
    found = []
    for other in {str(t): t for t in tags}.values():
        if other == tag or not index.takes_part(other):
            continue
        state = state_of(other)
        if state.publishing is not None:
            found.append(Neighbour(other, plan=state.publishing))
        elif state.is_published:
            if state.index_waits:
                found.append(Neighbour(other, waiting=True))
        else:
            found.append(Neighbour(other, listing=listing_of(other)))
    return found


log = logging.getLogger(__name__)


class Looks(Protocol):
    """What :func:`look_again` needs of the services: the observer, the release locks and a
    scan's look at one release."""

    observer: Observer

    def lock(self, tag: ReleaseTag) -> AbstractAsyncContextManager[None]: ...

    async def scan_release(self, tag: ReleaseTag) -> None: ...


async def look_again(looks: Looks, published: ReleaseState) -> None:
    """After ``published`` made a new index live: look now, each under its own lock, at the
    other open releases whose staging held an index, so that one made stale by it is told
    to its role at once, not at the next scan."""
    observer = looks.observer
    index = observer.index
    if index is None or not published.steps_done.get(INDEX_STEP, "").endswith("replaced"):
        return
    for other in observer.listed_tags():
        listing = observer.last_listing_seen(other)
        if other == published.tag or listing is None or index.rules.file not in listing:
            continue
        async with looks.lock(other):
            try:
                await looks.scan_release(other)
            except StorageError as err:  # the next scan says it, as any scan's trouble
                log.warning("could not look at %s after a new index went live: %s", other, err)


async def tell_refused(
    reporter: Reporter,
    index: IndexInspector | None,
    before: IndexCheck | None,
    readiness: Readiness,
) -> None:
    """An index that was staged and fine at the last look (``before``) and is refused now:
    tell its role, with the one way out. Nothing at a first look (a restart calls nobody):
    the summary says it."""
    verdict = readiness.install_index
    if index is None or verdict is None or not verdict.blockers:
        return
    if before is None or not before.verdict.staged or before.verdict.blockers:
        return
    tag, rules = readiness.tag, index.rules
    claim = next((r.claim for r in readiness.roles if r.role == rules.role and r.claim), None)
    await reporter.notice(
        tag,
        f"The install index staged for {tag} is refused now: {verdict.blockers[0]}. Only "
        f"{rules.file} and {rules.catalog} need staging again (then /ready {rules.role} {tag}); "
        f"the other files of {tag} need nothing.",
        mentions=[claim.person] if claim else (),
    )
