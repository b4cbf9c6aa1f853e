"""Whether each chat platform's release channel takes the bot's posts.

A post refused for a reason only the operator can fix (the bot was not invited, a scope is
missing, the channel is gone) would otherwise fail the same way for every message, unseen by
the team. It is told once: one log line, and ``/healthz`` degraded with the reason until a
post goes through again, or until the platform's probe (asked when ``/healthz`` is read, at
most every ``recheck_after`` seconds) finds the channel fixed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# Asks the platform whether its channel would take a post now: None, or why not (a sentence),
# or "" when it cannot tell (the platform cannot be reached: not the operator's to fix).
Probe = Callable[[], Awaitable[str | None]]


@dataclass
class ChannelHealth:
    """Per platform, the sentence saying why its channel refuses posts (absent: it does not)."""

    recheck_after: float = 10.0  # seconds between two probes of a refusing platform
    clock: Callable[[], float] = time.monotonic
    _problems: dict[str, str] = field(default_factory=dict)
    _probes: dict[str, Probe] = field(default_factory=dict)
    _probed: dict[str, float] = field(default_factory=dict)

    def refused(self, platform: str, problem: str) -> bool:
        """Record that ``platform`` refused a post because of ``problem`` (a sentence with
        the fix). True when this is news: the first refusal, or another reason than before."""
        news = self._problems.get(platform) != problem
        self._problems[platform] = problem
        return news

    def posted(self, platform: str) -> bool:
        """Record a post that went through; True when ``platform`` was refusing until now."""
        return self._problems.pop(platform, None) is not None

    def watch(self, platform: str, probe: Probe) -> None:
        """Let :meth:`recheck` ask ``probe`` while ``platform`` refuses posts."""
        self._probes[platform] = probe

    async def recheck(self) -> None:
        """Probe each refusing platform (not more often than ``recheck_after``), so that a
        fixed channel shows as fixed without waiting for the next post."""
        for platform in list(self._problems):
            probe = self._probes.get(platform)
            now = self.clock()
            if probe is None or now - self._probed.get(platform, -self.recheck_after) < (
                self.recheck_after
            ):
                continue
            self._probed[platform] = now
            problem = await probe()
            if problem == "":  # cannot tell: as it was
                continue
            if problem is None:
                self.posted(platform)
                log.warning("%s: the release channel would take the bot's posts again", platform)
            else:  # still refused (said when it began): the probe's sentence may be sharper
                self._problems[platform] = problem

    @property
    def platforms(self) -> list[str]:
        """Every platform watched or refusing, sorted (the series of ``/metrics``)."""
        return sorted({*self._probes, *self._problems})

    @property
    def problems(self) -> dict[str, str]:
        """Platform → why its channel refuses posts, for every platform that does."""
        return dict(self._problems)
