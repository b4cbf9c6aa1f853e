"""The release-tools patch in contrib/, checked offline: a well-formed git patch that names its
base commit (as its README does), and that calls ``relbot wait`` as relbot defines it. Applying
it and running release-tools' tests needs their code and PyPI: ``check-patch.sh`` does that."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from bot.wait.judge import Outcome

CONTRIB = Path(__file__).resolve().parents[1] / "contrib" / "release-tools"
PATCH = CONTRIB / "relbot-mode.patch"


def test_the_patch_is_one_commit_on_a_named_base() -> None:
    text = PATCH.read_text(encoding="utf-8")
    assert re.match(r"From [0-9a-f]{40} ", text)
    assert re.search(r"^Subject: \[PATCH\] Add a --relbot mode", text, re.MULTILINE)
    bases = re.findall(r"^base-commit: ([0-9a-f]{40})$", text, re.MULTILINE)
    assert len(bases) == 1
    readme = (CONTRIB / "README.md").read_text(encoding="utf-8")
    assert f"**Base commit:** `{bases[0]}`" in readme
    assert f"checkout {bases[0]}" in readme


def test_git_reads_the_patch_and_it_touches_only_the_script_and_its_tests() -> None:
    stat = subprocess.run(
        ["git", "apply", "--numstat", str(PATCH)], capture_output=True, text=True, check=True
    )
    files = [line.split("\t")[2] for line in stat.stdout.splitlines()]
    assert files == ["run_release.py", "tests/test_run_release.py"]


def test_the_patch_calls_relbot_wait_with_relbots_options_and_exit_statuses() -> None:
    added = "\n".join(
        line[1:] for line in PATCH.read_text(encoding="utf-8").splitlines() if line[:1] == "+"
    )
    assert '["relbot", "wait", str(release_tag), "--until", until, "--board", board]' in added
    statuses = dict(re.findall(r"^    (\d): \"([^\"]+)\",$", added, re.MULTILINE))
    assert statuses == {
        str(Outcome.TIMEOUT.value): "it timed out",
        str(Outcome.HELD.value): "the release is on hold",
        str(Outcome.ABORTED.value): "the publish was aborted",
    }
    for until in ("ready", "publishable", "published"):
        assert f'wait("{until}", ' in added
    assert 'json.loads(result.stdout)["headline"]' in added  # a field the board JSON has


def test_the_check_script_is_valid_shell() -> None:
    script = CONTRIB / "check-patch.sh"
    subprocess.run(["sh", "-n", str(script)], check=True)
    assert script.stat().st_mode & 0o111
