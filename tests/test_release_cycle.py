"""Branch status from the release cycle: a file, a URL served by a real HTTP server on
127.0.0.1, the last copy cached next to the state file, and the copy shipped in the package.
No test reaches the network."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.config import load_config
from bot.config.cycle_copy import local_copy, shipped_copy
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError
from bot.pydotorg.release_cycle import refresh
from tests.pinned import RELEASE_CYCLE

RELBOT = Path(sys.executable).with_name("relbot")
TEAM = '[people.hugo]\nrm = ["3.12", "3.14"]\nroles = ["source", "docs"]\n'


class CycleServer:
    """Serves one body at /release-cycle.json, counting requests."""

    def __init__(self) -> None:
        self.body = RELEASE_CYCLE.read_bytes()
        self.status = 200
        self.requests = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests += 1
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

            def log_message(self, *args: object) -> None:
                return None

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/release-cycle.json"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[CycleServer]:
    served = CycleServer()
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


def write_config(folder: Path, source: str) -> Path:
    path = folder / "relbot.toml"
    path.write_text(f'release_cycle = "{source}"\n' + TEAM, encoding="utf-8")
    return path


def test_a_configured_file_gives_each_branch_its_status(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, str(RELEASE_CYCLE)))

    assert config.profile.status(ReleaseTag.parse("3.12.13")) == "security"
    assert config.profile.status(ReleaseTag.parse("3.14.2")) == "bugfix"
    assert config.profile.roles_for(ReleaseTag.parse("3.12.13")) == ("source", "docs")


def test_a_missing_or_broken_file_is_one_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"release_cycle: .*nowhere\.json cannot be read"):
        load_config(write_config(tmp_path, "nowhere.json"))
    (tmp_path / "bad.json").write_text('{"3.14": {"status": "sunny"}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"release_cycle: .*'3\.14' has no known status"):
        load_config(write_config(tmp_path, "bad.json"))


def test_without_a_cached_copy_the_shipped_one_is_used_and_nothing_is_fetched(
    tmp_path: Path, server: CycleServer
) -> None:
    config = load_config(write_config(tmp_path, server.url))

    assert config.release_cycle.origin == "the copy shipped with relbot"
    assert (
        config.profile.status(ReleaseTag.parse("3.12.13"))
        == shipped_copy().cycle.statuses()["3.12"]
    )
    assert server.requests == 0


def test_refresh_reads_the_url_keeps_the_copy_and_later_loads_use_it(
    tmp_path: Path, server: CycleServer
) -> None:
    data = json.loads(server.body)
    data["3.14"]["status"] = "security"  # a copy that differs from the shipped one
    server.body = json.dumps(data).encode()
    cache = tmp_path / "cache" / "release-cycle.json"

    copy, problem = refresh(server.url, tmp_path, cache)

    assert problem is None and server.requests == 1
    assert copy.cycle.statuses()["3.14"] == "security"
    assert json.loads(cache.read_bytes()) == data
    again = local_copy(server.url, tmp_path, cache)
    assert again.origin == f"the cached copy of {server.url}"
    assert again.cycle.statuses()["3.14"] == "security"


def test_a_failing_url_keeps_the_last_copy_and_says_why(
    tmp_path: Path, server: CycleServer
) -> None:
    cache = tmp_path / "release-cycle.json"
    refresh(server.url, tmp_path, cache)
    before = cache.read_bytes()
    server.status = 503

    copy, problem = refresh(server.url, tmp_path, cache)

    assert problem is not None and "503" in problem and server.url in problem
    assert copy.origin == f"the cached copy of {server.url}"
    assert cache.read_bytes() == before
    server.status, server.body = 200, b"<html>not json</html>"
    copy, problem = refresh(server.url, tmp_path, cache)
    assert problem is not None and "not valid JSON" in problem
    assert cache.read_bytes() == before


def test_relbot_check_says_which_copy_is_in_use_and_how_old(
    tmp_path: Path, server: CycleServer
) -> None:
    write_config(tmp_path, server.url)
    for folder in ("staging", "public"):  # check never creates them
        (tmp_path / "relbot-data" / folder).mkdir(parents=True)

    first = subprocess.run(
        [str(RELBOT), "check"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )

    assert first.returncode == 0, first.stderr
    assert f"release cycle from {server.url}, read just now" in first.stdout
    assert (tmp_path / "relbot-data" / "release-cycle.json").is_file()
    server.status = 500
    second = subprocess.run(
        [str(RELBOT), "check"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 1
    assert f"release cycle from the cached copy of {server.url}, read just now" in second.stdout
    assert "could not be read" in second.stderr and "500" in second.stderr


def test_manifest_and_status_work_offline_with_the_branch_status(tmp_path: Path) -> None:
    write_config(tmp_path, "http://127.0.0.1:9/never-asked.json")
    staging = tmp_path / "relbot-data" / "staging" / "3.12.13"
    staging.mkdir(parents=True)
    (staging / "Python-3.12.13.tgz").write_bytes(b"source")

    manifest = subprocess.run(
        [str(RELBOT), "manifest", "3.12.13"], cwd=tmp_path, capture_output=True, text=True
    )
    status = subprocess.run(
        [str(RELBOT), "status", "3.12.13"], cwd=tmp_path, capture_output=True, text=True
    )

    assert manifest.returncode == 0, manifest.stderr
    assert {line.split("\t")[0] for line in manifest.stdout.splitlines()} == {"source", "docs"}
    assert "branch 3.12: security (source and docs only)" in status.stdout
