"""``relbot wait``: block until a release is ready, publishable or published, judging the
release's board JSON (``GET /api/releases/TAG``) however it was obtained: from the running
bot's board, or built from the state file (:mod:`bot.wait.sources`). One judgement for both,
so a release automation sees the same answer whichever it asks.

The states are ordered: ``ready`` (every role the release requires is ready or waived), then
``publishable`` (``/publish TAG`` would offer a plan), then ``published``. A release past the
state waited for has reached it: a release being published was publishable.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Protocol

from bot.errors import RelbotError

Release = Mapping[str, Any]  # the board JSON of one release
DEFAULT_INTERVAL = 2.0  # seconds between looks
MAX_SHOWN = 3  # blockers named in a sentence; the JSON has them all


class Until(StrEnum):
    READY = "ready"
    PUBLISHABLE = "publishable"
    PUBLISHED = "published"


class Outcome(IntEnum):
    """``relbot wait``'s exit status (1 is any other error, 2 a command-line mistake)."""

    REACHED = 0
    TIMEOUT = 3
    HELD = 4
    ABORTED = 5


class LookFailed(RelbotError):
    """One look at the release failed (the board or the storage did not answer). Fatal at
    the first look, which catches a wrong URL or config; waited out afterwards."""


class Source(Protocol):
    """Where a wait looks: the release's board JSON now, or None while the bot has never
    seen the release (nothing staged, nothing said). Raises :class:`LookFailed`."""

    async def look(self) -> Release | None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class Verdict:
    """One look's judgement: ``outcome`` None means keep waiting, and ``sentence`` says for
    what; otherwise the sentence says why the wait is over."""

    outcome: Outcome | None
    sentence: str


def is_ready(release: Release) -> bool:
    """Every role is ``ready`` or ``waived`` (the board's ``ready``; computed from ``roles``
    for a board older than that field)."""
    if "ready" in release:
        return bool(release["ready"])
    return all(r["state"] in ("ready", "waived") for r in release["roles"].values())


def judge(release: Release | None, tag: str, until: Until, since: int) -> Verdict:
    """Whether ``release`` has reached ``until``, must stop the wait (a hold; for
    ``published``, an abort recorded after event ``since``), or is still on its way."""
    if release is None:
        return Verdict(None, f"nothing is recorded for {tag} yet")
    published, publishing = bool(release["published"]), bool(release.get("publishing"))
    reached = {
        Until.READY: published or publishing or is_ready(release),
        Until.PUBLISHABLE: published or publishing or bool(release["publishable"]),
        Until.PUBLISHED: published,
    }[until]
    if reached:
        return Verdict(Outcome.REACHED, f"{tag} is {until}")
    if release["holds"]:
        hold = release["holds"][0]
        why = f": {hold['reason'].rstrip('.')}" if hold.get("reason") else ""
        return Verdict(
            Outcome.HELD,
            f"{tag} is held by {hold['by']}{why}; wait again once someone says /unhold {tag}",
        )
    aborted = release.get("aborted")
    if until is Until.PUBLISHED and aborted and aborted["event"] > since and not publishing:
        return Verdict(
            Outcome.ABORTED,
            f"the publish of {tag} was aborted ({aborted['reason'].rstrip('.')}); nothing was "
            "made public, "
            f"and the release manager can say /publish {tag} again",
        )
    return Verdict(None, _missing(release, tag, until))


def _missing(release: Release, tag: str, until: Until) -> str:
    """What the release still lacks for ``until``, in a few words."""
    if not is_ready(release):
        late = [r for r, v in release["roles"].items() if v["state"] not in ("ready", "waived")]
        if not release.get("listed", True):  # roles as the log has them, staging not looked at
            return "waiting for /ready from " + ", ".join(late)
        return "not ready: " + ", ".join(f"{r} ({release['roles'][r]['state']})" for r in late)
    if until is Until.PUBLISHED:
        if release.get("publishing"):
            return "being published now"
        if release["publishable"]:
            return f"publishable; waiting for the release manager to confirm /publish {tag}"
        if not release.get("listed", True):
            return f"every role is ready; waiting for /publish {tag} and its confirmation"
    blockers = list(release["blockers"])
    more = len(blockers) - MAX_SHOWN
    shown = "; ".join(blockers[:MAX_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return f"not publishable: {shown}"


@dataclass(frozen=True)
class Result:
    verdict: Verdict
    release: Release | None  # the last look's JSON (None: never seen)


@dataclass(frozen=True)
class Results:
    """The end of a wait for several releases: why (the verdict names the release that ended
    it, when one did), and each release's last JSON, in the order they were named."""

    verdict: Verdict
    releases: tuple[Release | None, ...]


async def wait(
    source: Source,
    tag: str,
    until: Until,
    *,
    timeout: float | None,
    interval: float = DEFAULT_INTERVAL,
    say: Callable[[str], None] = lambda line: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Result:
    """Look every ``interval`` seconds until ``until`` is reached, a hold or an abort stops
    the wait, or ``timeout`` seconds have passed (None: no limit; 0: look once). ``say``
    gets a line whenever what the wait is waiting for changes, and when the source fails or
    recovers. Raises :class:`LookFailed` when the first look fails."""
    results = await wait_all(
        [(tag, source)],
        until,
        timeout=timeout,
        interval=interval,
        say=say,
        clock=clock,
        sleep=sleep,
    )
    return Result(results.verdict, results.releases[0])


async def wait_all(
    sources: Sequence[tuple[str, Source]],
    until: Until,
    *,
    timeout: float | None,
    interval: float = DEFAULT_INTERVAL,
    say: Callable[[str], None] = lambda line: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Results:
    """:func:`wait` for every release of ``sources`` (``(tag, source)``, in the order named):
    over once every one has reached ``until`` at the same look, or as soon as a hold or an
    abort stops one of them (the first named, when several do), or at the timeout (naming
    the first not there yet, and the others). Each look asks every source once."""
    tags = [tag for tag, _ in sources]
    deadline = None if timeout is None else clock() + timeout
    releases = [await source.look() for _, source in sources]
    # Only an abort recorded after this first look ends the wait: an earlier one was
    # followed by nothing, and the release manager may well publish again.
    since = [int(r.get("last_event", 0)) if r is not None else 0 for r in releases]
    said, failing = dict.fromkeys(tags, ""), False
    while True:
        verdicts = [
            judge(release, tag, until, after)
            for tag, release, after in zip(tags, releases, since, strict=True)
        ]
        stopped = [v for v in verdicts if v.outcome not in (None, Outcome.REACHED)]
        if stopped:
            return Results(stopped[0], tuple(releases))
        waiting = [(tag, v) for tag, v in zip(tags, verdicts, strict=True) if v.outcome is None]
        if not waiting:
            reached = verdicts[0].sentence if len(tags) == 1 else f"{_and(tags)} are {until}"
            return Results(Verdict(Outcome.REACHED, reached), tuple(releases))
        if deadline is not None and clock() >= deadline:
            (first, verdict), others = waiting[0], [tag for tag, _ in waiting[1:]]
            sentence = f"{first} is not {until} after {timeout:g} s: {verdict.sentence}"
            if others:
                sentence += f"; nor {'is' if len(others) == 1 else 'are'} {_and(others)}"
            return Results(Verdict(Outcome.TIMEOUT, sentence), tuple(releases))
        for tag, verdict in waiting:
            if verdict.sentence != said[tag]:
                said[tag] = verdict.sentence
                say(f"{tag}: {verdict.sentence}")
        pause = interval if deadline is None else min(interval, max(0.0, deadline - clock()))
        await sleep(pause)
        failed = False
        for n, (_, source) in enumerate(sources):
            try:
                releases[n] = await source.look()
            except LookFailed as err:  # judged on its last look meanwhile
                if not failing:
                    say(f"{err} Still waiting.")
                failing = failed = True
        if failing and not failed:
            say("Answering again.")
            failing = False


def _and(tags: Sequence[str]) -> str:
    """``3.13.4``, ``3.13.4 and 3.12.11``, ``3.13.4, 3.12.11 and 3.11.13``."""
    return tags[0] if len(tags) == 1 else f"{', '.join(tags[:-1])} and {tags[-1]}"
