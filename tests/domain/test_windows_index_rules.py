"""The install-manager index rules, as the RM reads them: the summary line and the blockers."""

from __future__ import annotations

import json

from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import IndexRules, IndexVerdict, judge_index
from tests.windows_index_data import index_bytes, installs, manifest_bytes

RULES = IndexRules("index-windows.json", "windows", "windows-{tag}.json")
TAG = ReleaseTag.parse("3.14.2")
LIVE = index_bytes("3.14.1", "3.14.0")


def judge(
    index: bytes | None,
    *,
    catalog: bool = True,
    live: bytes | None = LIVE,
    manifest: bytes | None = manifest_bytes("3.14.2"),
) -> IndexVerdict:
    return judge_index(
        RULES, TAG, index=index, catalog_staged=catalog, live=live, manifest=manifest
    )


def document(entries: list[dict[str, object]]) -> bytes:
    return json.dumps({"versions": entries}).encode()


def test_the_summary_of_a_blocked_index_gives_its_first_blocker() -> None:
    verdict = judge(index_bytes("3.14.1", "3.14.0"), catalog=False)
    assert verdict.describe() == (
        "staged, blocks publishing: index-windows.json is staged without its catalog "
        "index-windows.json.cat: stage both or neither"
    )


def test_the_summary_lists_each_version_of_the_release_the_index_holds() -> None:
    release: list[dict[str, object]] = [
        *installs("3.14.2"),
        {"id": "pythoncore-3.14-dbg", "sort-version": "3.14.2-dbg"},
    ]
    verdict = judge(
        document(release + installs("3.14.1") + installs("3.14.0")), manifest=document(release)
    )
    assert verdict.describe().startswith("staged, holds 3.14.2, 3.14.2-dbg, keeps")


def test_the_summary_of_an_index_for_a_release_without_installs_says_so() -> None:
    verdict = judge(LIVE, manifest=document([]))
    assert verdict.describe() == (
        "staged, holds no install of this release, keeps 12 live installs"
    )


def test_a_catalog_staged_alone_says_the_live_index_is_left_alone() -> None:
    (blocker,) = judge(None, catalog=True).blockers
    assert blocker.endswith("stage both or neither (without them the live index is left alone)")


def test_a_staged_index_that_is_not_json_is_named_in_its_blocker() -> None:
    (blocker,) = judge(b"{not json").blockers
    assert blocker.startswith("index-windows.json is not JSON")


def test_a_manifest_that_is_not_json_is_named_in_its_blocker() -> None:
    (blocker,) = judge(index_bytes("3.14.2", "3.14.1", "3.14.0"), manifest=b"[]").blockers
    assert blocker == 'windows-3.14.2.json is not {"versions": [...]}'


def test_an_index_lacking_two_published_releases_names_both() -> None:
    (blocker,) = judge(index_bytes("3.14.2"), live=index_bytes("3.14.1", "3.14.0")).blockers
    assert blocker.startswith("index-windows.json was built before 3.14.1, 3.14.0 was published")


def test_three_missing_installs_are_all_named_with_no_more_to_count() -> None:
    release = installs("3.14.2")
    (blocker,) = judge(document(release[3:] + installs("3.14.1") + installs("3.14.0"))).blockers
    assert blocker == (
        "index-windows.json lacks 3.14.2's installs: pythoncore-3.14-64 3.14.2, "
        "pythoncore-3.14-32 3.14.2, pythoncore-3.14-arm64 3.14.2; rebuild it with "
        "windows-3.14.2.json"
    )


def test_a_fourth_missing_install_is_counted_as_one_more() -> None:
    release = installs("3.14.2")
    (blocker,) = judge(document(release[4:] + installs("3.14.1") + installs("3.14.0"))).blockers
    assert "pythoncore-3.14-arm64 3.14.2 and 1 more; rebuild it" in blocker


def test_a_catalog_staged_alone_is_described_as_staged_and_blocking() -> None:
    assert (
        judge(None, catalog=True)
        .describe()
        .startswith(
            "staged, blocks publishing: index-windows.json.cat is staged without index-windows.json"
        )
    )


def test_an_install_whose_id_is_not_text_is_named() -> None:
    entries: list[dict[str, object]] = [{"id": 64, "sort-version": "3.14.2"}]
    (blocker,) = judge(document(entries)).blockers
    assert blocker == ('index-windows.json: install 1 lacks "id" or "sort-version": rebuild it')
