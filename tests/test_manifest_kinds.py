"""``relbot manifest`` prints, for every kind of release, the files of the table (branch
statuses from the pinned release cycle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.domain.test_expected_files import CASES, fill
from tests.pinned import RELEASE_CYCLE_LINE

RELBOT = Path(sys.executable).with_name("relbot")


@pytest.mark.parametrize(("tag", "status", "roles"), CASES, ids=[c[0] for c in CASES])
def test_relbot_manifest_prints_the_table(
    tmp_path: Path, tag: str, status: str, roles: dict[str, list[str]]
) -> None:
    (tmp_path / "relbot.toml").write_text(RELEASE_CYCLE_LINE, encoding="utf-8")

    result = subprocess.run(
        [str(RELBOT), "manifest", tag], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    printed: dict[str, set[str]] = {}
    for line in result.stdout.splitlines():
        role, path = line.split("\t")
        printed.setdefault(role, set()).add(path)
    assert printed == fill(tag, **roles)
