"""Whether each chat platform's release channel takes the bot's posts.

A post refused for a reason only the operator can fix (the bot was not invited, a scope is
missing, the channel is gone) would otherwise fail the same way for every message, unseen by
the team. It is told once: one log line, and ``/healthz`` degraded with the reason until a
post goes through again.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ChannelHealth:
    """Per platform, the sentence saying why its channel refuses posts (absent: it does not)."""

    _problems: dict[str, str] = field(default_factory=dict)

    def refused(self, platform: str, problem: str) -> bool:
        """Record that ``platform`` refused a post because of ``problem`` (a sentence with
        the fix). True when this is news: the first refusal, or another reason than before."""
        news = self._problems.get(platform) != problem
        self._problems[platform] = problem
        return news

    def posted(self, platform: str) -> bool:
        """Record a post that went through; True when ``platform`` was refusing until now."""
        return self._problems.pop(platform, None) is not None

    @property
    def problems(self) -> dict[str, str]:
        """Platform → why its channel refuses posts, for every platform that does."""
        return dict(self._problems)
