"""Reading what the index verdict needs: staged files first, the public copy of the release's
manifest when it is published already (late files carrying a new index)."""

from __future__ import annotations

from pathlib import Path

from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.service.windows_index import IndexInspector, sha256
from bot.storage.local import LocalStorage
from tests.windows_index_data import LIVE_VERSIONS, index_bytes, manifest_bytes, stage_windows_index

TAG = ReleaseTag.parse("3.14.1")


def inspector(tmp_path: Path) -> tuple[IndexInspector, LocalStorage]:
    storage = LocalStorage(tmp_path / "staging", tmp_path / "public")
    found = IndexInspector.for_profile(storage, load_profile("cpython"))
    assert found is not None
    return found, storage


def test_late_files_check_the_index_against_the_published_manifest(tmp_path: Path) -> None:
    checker, storage = inspector(tmp_path)
    (tmp_path / "public" / "3.14.1").mkdir(parents=True)
    (tmp_path / "public" / "3.14.1" / "windows-3.14.1.json").write_bytes(manifest_bytes("3.14.1"))
    live = index_bytes(*LIVE_VERSIONS)
    (tmp_path / "public" / "index-windows.json").write_bytes(live)
    stage_windows_index(tmp_path / "staging" / "3.14.1", "3.14.1", *LIVE_VERSIONS)
    (tmp_path / "staging" / "3.14.1" / "windows-3.14.1.json").unlink()  # published before
    check = checker.check(TAG, storage.list_staging(TAG) or {})
    assert check is not None
    assert check.verdict.blockers == ()
    assert check.verdict.describe() == "staged, holds 3.14.1, keeps 24 live installs"
    assert check.live == {"index-windows.json": sha256(live), "index-windows.json.cat": "absent"}


def test_a_scan_reuses_the_verdict_until_a_staged_file_changes(tmp_path: Path) -> None:
    checker, storage = inspector(tmp_path)
    stage_windows_index(tmp_path / "staging" / "3.14.1", "3.14.1")
    first = checker.check(TAG, storage.list_staging(TAG) or {})
    (tmp_path / "public").mkdir()
    (tmp_path / "public" / "index-windows.json").write_bytes(index_bytes("3.13.10"))
    assert checker.check(TAG, storage.list_staging(TAG) or {}) is first  # nothing re-read
    fresh = checker.check(TAG, storage.list_staging(TAG) or {}, fresh=True)
    assert fresh is not None and "built before 3.13.10 was published" in fresh.verdict.blockers[0]
