"""``/metrics``: parsed with prometheus_client's own parser, values as the gate counted them."""

from __future__ import annotations

import platform

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from bot import __version__
from bot.metrics import REFUSAL_REASONS, Metrics
from bot.service.gate import Gate
from tests.conftest import World


def samples(metrics: Metrics) -> dict[str, list[Sample]]:
    """Every family of the exposition by name (parsed, not grepped)."""
    text = metrics.prometheus().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def value(metrics: Metrics, name: str, **labels: str) -> float:
    for family in samples(metrics).values():
        for sample in family:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    raise AssertionError(f"no sample {name}{labels}")


def test_a_timestamp_round_trips_exactly() -> None:
    metrics = Metrics()
    at = 1_796_230_000.123456  # `{value:g}` printed 1.79623e+09: 5,000 s off
    metrics.scanned(0.5, at)

    assert value(metrics, "relbot_last_successful_scan_timestamp_seconds") == at
    assert value(metrics, "relbot_start_time_seconds") == metrics.started


def test_scan_durations_are_a_histogram() -> None:
    metrics = Metrics()
    for seconds in (0.004, 0.2, 3.0):
        metrics.scanned(seconds, 1.0)

    assert value(metrics, "relbot_scans_total") == 3
    assert value(metrics, "relbot_scan_duration_seconds_count") == 3
    assert value(metrics, "relbot_scan_duration_seconds_sum") == 0.004 + 0.2 + 3.0
    assert value(metrics, "relbot_scan_duration_seconds_bucket", le="0.01") == 1
    assert value(metrics, "relbot_scan_duration_seconds_bucket", le="0.25") == 2
    assert value(metrics, "relbot_scan_duration_seconds_bucket", le="+Inf") == 3
    assert samples(metrics)["relbot_scan_duration_seconds"][0].name.endswith("_bucket")


def test_build_info_and_process_metrics_are_exposed() -> None:
    metrics = Metrics()
    found = samples(metrics)

    info = found["relbot_build_info"][0]
    assert info.name == "relbot_build_info" and info.value == 1
    assert info.labels == {"version": __version__, "python": platform.python_version()}
    assert value(metrics, "process_resident_memory_bytes") > 0
    assert "process_cpu_seconds" in found


def test_every_refusal_reason_is_a_series_and_free_text_is_not_a_label() -> None:
    metrics = Metrics()
    metrics.refused("code")
    metrics.refused("something a user typed")

    assert value(metrics, "relbot_refusals_total", reason="code") == 1
    assert value(metrics, "relbot_refusals_total", reason="rule") == 1
    reasons = {s.labels["reason"] for s in samples(metrics)["relbot_refusals"]}
    assert reasons == set(REFUSAL_REASONS)


async def test_the_gate_counts_commands_and_refusals_by_reason(world: World) -> None:
    world.stage("3.14.1")
    await world.say("hugo", "/readdy source 3.14.1")  # syntax
    await world.gate.handle("slack", "U999", "/ready source 3.14.1")  # not on the team
    await world.say("steve", "/ready source 3.14.1")  # not allowed: steve holds windows
    await world.say("eve", "/publish 3.14.1")  # not allowed: no RM
    await world.say("hugo", "/publish 3.14.1 confirm WRONGCODE")  # code
    await world.say("hugo", "/publish 3.14.1")  # rule: nothing is ready
    await world.say("hugo", "/status 3.14.1")
    await world.gate.scan()

    m = world.gate.metrics
    assert value(m, "relbot_refusals_total", reason="syntax") == 1
    assert value(m, "relbot_refusals_total", reason="not_on_team") == 1
    assert value(m, "relbot_refusals_total", reason="not_allowed") == 2
    assert value(m, "relbot_refusals_total", reason="code") == 1
    assert value(m, "relbot_refusals_total", reason="rule") == 1
    assert value(m, "relbot_refusals_total", reason="storage") == 0
    assert value(m, "relbot_commands_total", command="publish") == 2
    assert value(m, "relbot_commands_total", command="status") == 1
    assert value(m, "relbot_scans_total") == 1
    assert value(m, "relbot_last_successful_scan_timestamp_seconds") == world.clock.now


async def test_the_gate_counts_into_the_metrics_it_is_given(world: World) -> None:
    """bot.app.build_gate hands the gate the Metrics the health server serves at /metrics:
    the gate must count into that one, not into one of its own."""
    served = Metrics()
    gate = Gate(world.config, world.store, world.conn, metrics=served, clock=world.clock)

    await gate.handle("slack", "U999", "/ready source 3.14.1")  # not on the team

    assert gate.metrics is served
    assert value(served, "relbot_refusals_total", reason="not_on_team") == 1
