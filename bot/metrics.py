"""What the bot does, counted, and its Prometheus exposition (``GET /metrics``).

The gate keeps plain counters on :class:`Metrics`; a collector reads them at scrape time,
so ``/metrics`` and ``/healthz`` always agree. Scan durations go to a histogram. Every
``Metrics`` has a registry of its own (tests build many gates in one process), with the
process collector (CPU, memory, open files) and ``relbot_build_info``.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from prometheus_client import CollectorRegistry, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from bot import __version__
from bot.channel_health import ChannelHealth

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

# Why a command was refused: a small closed set, so the label never holds free text.
REFUSAL_REASONS: Final = (
    "syntax",  # not a command, or a usage error
    "not_on_team",  # the user is not a person of the config
    "not_allowed",  # a person without the role or the RM rights the command needs
    "code",  # a confirmation code that is wrong, spent, expired or someone else's
    "rule",  # any other rule of the gate: blockers, holds, nothing staged, already published
    "storage",  # staging could not be read
    "publish_stopped",  # confirmed, but a publish step failed (it resumes by itself)
)

# Scans list one folder per release; over SFTP a first scan hashes everything.
SCAN_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass
class Metrics:
    scans: int = 0
    scan_failures: int = 0
    last_scan_seconds: float = 0.0
    last_successful_scan: float = 0.0  # Unix time; 0 before the first
    publishes: int = 0
    publish_failures: int = 0
    public_mismatches: int = 0  # promotions after which public differed from the plan
    commands: dict[str, int] = field(default_factory=dict)  # verb → count
    refusals: dict[str, int] = field(default_factory=dict)  # reason → count
    started: float = field(default_factory=time.time)
    channels: ChannelHealth = field(default_factory=ChannelHealth)  # posts refused, by platform
    registry: CollectorRegistry = field(init=False, repr=False, compare=False)
    _durations: Histogram = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._durations = Histogram(
            "relbot_scan_duration_seconds",
            "Duration of staging scans that read staging.",
            buckets=SCAN_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_Counters(self))
        ProcessCollector(registry=self.registry)

    def scanned(self, seconds: float, at: float) -> None:
        """Record a scan that read staging: it took ``seconds`` and ended at Unix time ``at``."""
        self.scans += 1
        self.last_scan_seconds = seconds
        self.last_successful_scan = at
        self._durations.observe(seconds)

    def refused(self, reason: str) -> None:
        """Count a refusal; ``reason`` is one of :data:`REFUSAL_REASONS` (else ``rule``)."""
        label = reason if reason in REFUSAL_REASONS else "rule"
        self.refusals[label] = self.refusals.get(label, 0) + 1

    def prometheus(self) -> bytes:
        """The exposition in Prometheus text format 0.0.4 (see :data:`CONTENT_TYPE`)."""
        return generate_latest(self.registry)


class _Counters(Collector):
    """The plain counters of :class:`Metrics`, read at every scrape."""

    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | InfoMetricFamily]:
        m = self._m
        yield InfoMetricFamily(
            "relbot_build",
            "The running relbot.",
            value={"version": __version__, "python": platform.python_version()},
        )
        yield _counter("relbot_scans", "Staging scans that read staging.", m.scans)
        yield _counter(
            "relbot_scan_failures", "Scans that could not read staging.", m.scan_failures
        )
        yield GaugeMetricFamily(
            "relbot_last_successful_scan_timestamp_seconds",
            "Unix time of the last scan that read staging (0 before the first).",
            value=m.last_successful_scan,
        )
        yield _counter("relbot_publishes", "Releases published.", m.publishes)
        yield _counter(
            "relbot_publish_failures",
            "Publish steps that failed (and will resume).",
            m.publish_failures,
        )
        yield _counter(
            "relbot_public_mismatches",
            "Promotions after which a public file differed from the confirmed plan.",
            m.public_mismatches,
        )
        commands = CounterMetricFamily(
            "relbot_commands", "Chat commands answered, by verb.", labels=["command"]
        )
        for verb, n in sorted(m.commands.items()):
            commands.add_metric([verb], n)
        yield commands
        refusals = CounterMetricFamily(
            "relbot_refusals", "Commands refused, by reason.", labels=["reason"]
        )
        for reason in REFUSAL_REASONS:  # every reason, 0 included: rates need the series
            refusals.add_metric([reason], m.refusals.get(reason, 0))
        yield refusals
        yield GaugeMetricFamily(
            "relbot_start_time_seconds", "Unix time the bot started.", value=m.started
        )
        refusing = GaugeMetricFamily(
            "relbot_channel_refusing",
            "1 while the platform's release channel refuses the bot's posts (see /healthz).",
            labels=["platform"],
        )
        refused = m.channels.problems
        for name in m.channels.platforms:
            refusing.add_metric([name], 1 if name in refused else 0)
        yield refusing


def _counter(name: str, help_text: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, help_text, value=value)
