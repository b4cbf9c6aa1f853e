"""`[health] host` and `relbot health`: the container's check follows the configured port, and
a wildcard host is reachable on more than 127.0.0.1 (so Prometheus can scrape a container)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bot.web.healthcheck import probe_url
from tests.sshd import free_port

RELBOT = Path(sys.executable).with_name("relbot")


def health(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RELBOT_CONFIG"}
    return subprocess.run(
        [str(RELBOT), "health"], cwd=cwd, env=env, capture_output=True, text=True, timeout=30
    )


def test_relbot_health_follows_the_configured_host_and_port(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "relbot.toml").write_text(
        f'poll_interval = 1\n[health]\nhost = "0.0.0.0"\nport = {port}\n'
        "[people.hugo]\nrm = ['3.14']\n",
        encoding="utf-8",
    )
    for name in ("staging", "public"):
        (tmp_path / "relbot-data" / name).mkdir(parents=True)  # `relbot run` creates no folder
    assert health(tmp_path).returncode == 1  # nothing runs yet
    bot = subprocess.Popen(
        [str(RELBOT), "run"], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert bot.stdin is not None
    try:
        deadline = time.monotonic() + 30
        result = health(tmp_path)
        while result.returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            result = health(tmp_path)
        assert result.returncode == 0, result.stderr
        assert f"http://127.0.0.1:{port}/healthz answered 200" in result.stdout
        # Bound to every address: 127.0.0.2 is not 127.0.0.1, yet it answers.
        with urllib.request.urlopen(f"http://127.0.0.2:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
        names = {family.name for family in text_string_to_metric_families(text)}
        assert {"relbot_scans", "relbot_build_info", "process_cpu_seconds"} <= names
    finally:
        bot.stdin.close()
        assert bot.wait(timeout=30) == 0
    stopped = health(tmp_path)
    assert stopped.returncode == 1
    assert "did not answer" in stopped.stderr


def test_without_a_health_table_the_probe_says_what_to_add(tmp_path: Path) -> None:
    result = health(tmp_path)

    assert result.returncode == 1
    assert "has no [health] table" in result.stderr


def test_a_wildcard_address_is_probed_on_the_loopback_of_its_family() -> None:
    assert probe_url("0.0.0.0", 9110) == "http://127.0.0.1:9110/healthz"
    assert probe_url("::", 9110) == "http://[::1]:9110/healthz"
    assert probe_url("10.0.0.5", 1) == "http://10.0.0.5:1/healthz"
    assert probe_url("relbot.internal", 2) == "http://relbot.internal:2/healthz"
