"""Counters of what the bot does, for ``/metrics`` (Prometheus text format)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


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
    refusals: int = 0
    started: float = field(default_factory=time.time)

    def prometheus(self) -> str:
        """The exposition text: one HELP, TYPE and sample line group per metric."""
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
            lines.append(f"# HELP relbot_{name} {help_text}")
            lines.append(f"# TYPE relbot_{name} {kind}")
            lines.extend(f"relbot_{name}{labels} {value:g}" for labels, value in samples)

        metric("scans_total", "counter", "Staging scans run.", [("", self.scans)])
        metric(
            "scan_failures_total", "counter", "Scans that could not read staging.",
            [("", self.scan_failures)],
        )  # fmt: skip
        metric(
            "scan_duration_seconds", "gauge", "Duration of the last scan.",
            [("", self.last_scan_seconds)],
        )  # fmt: skip
        metric(
            "last_successful_scan_timestamp_seconds", "gauge",
            "Unix time of the last scan that read staging.", [("", self.last_successful_scan)],
        )  # fmt: skip
        metric("publishes_total", "counter", "Releases published.", [("", self.publishes)])
        metric(
            "publish_failures_total", "counter", "Publish steps that failed (and will resume).",
            [("", self.publish_failures)],
        )  # fmt: skip
        metric(
            "public_mismatches_total", "counter",
            "Promotions after which a public file differed from the confirmed plan.",
            [("", self.public_mismatches)],
        )  # fmt: skip
        metric(
            "commands_total", "counter", "Chat commands answered, by verb.",
            [(f'{{command="{verb}"}}', n) for verb, n in sorted(self.commands.items())],
        )  # fmt: skip
        metric("refusals_total", "counter", "Commands refused.", [("", self.refusals)])
        metric("start_time_seconds", "gauge", "Unix time the bot started.", [("", self.started)])
        return "\n".join(lines) + "\n"
