"""The install-manager index rules: what a staged index must hold before /publish."""

from __future__ import annotations

import dataclasses
import json

import pytest

from bot.domain.profile import Profile, ProfileSpec, load_profile
from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import (
    IndexRules,
    IndexVerdict,
    InvalidIndex,
    index_target,
    judge_index,
    parse_installs,
)
from bot.errors import ConfigError
from tests.windows_index_data import index_bytes, installs, manifest_bytes

RULES = IndexRules("index-windows.json", "windows", "windows-{tag}.json")
TAG = ReleaseTag.parse("3.14.2")


def judge(
    index: bytes | None,
    live: bytes | None = index_bytes("3.14.1", "3.14.0"),
    *,
    catalog: bool = True,
    manifest: bytes | None = manifest_bytes("3.14.2"),
) -> IndexVerdict:
    return judge_index(
        RULES, TAG, index=index, catalog_staged=catalog, live=live, manifest=manifest
    )


def test_an_index_keeping_every_live_install_and_holding_the_release_passes() -> None:
    verdict = judge(index_bytes("3.14.2", "3.14.1", "3.14.0"))
    assert verdict.blockers == ()
    assert verdict.live_kept == 12 and verdict.installs == 18
    assert verdict.describe() == "staged, holds 3.14.2, keeps 12 live installs"


def test_an_index_built_before_the_last_publish_names_that_release() -> None:
    verdict = judge(index_bytes("3.14.2", "3.14.0"))
    assert len(verdict.blockers) == 1
    blocker = verdict.blockers[0]
    assert blocker.startswith(
        "index-windows.json was built before 3.14.1 was published: rebuild it"
    )
    assert "pythoncore-3.14-64 3.14.1, pythoncore-3.14-32 3.14.1" in blocker
    assert "and 3 more" in blocker


def test_an_index_without_this_releases_installs_names_them() -> None:
    verdict = judge(index_bytes("3.14.1", "3.14.0"))
    assert verdict.blockers == (
        "index-windows.json lacks 3.14.2's installs: pythoncore-3.14-64 3.14.2, "
        "pythoncore-3.14-32 3.14.2, pythoncore-3.14-arm64 3.14.2 and 3 more; rebuild it "
        "with windows-3.14.2.json",
    )


def test_installs_compare_without_regard_to_case() -> None:
    shouted = json.dumps(
        {
            "versions": [
                {**i, "id": str(i["id"]).upper(), "sort-version": str(i["sort-version"]).upper()}
                for v in ("3.14.2", "3.14.1", "3.14.0")
                for i in installs(v)
            ]
        }
    ).encode()
    assert judge(shouted).blockers == ()


def test_one_of_the_pair_alone_blocks_and_neither_leaves_the_live_index_alone() -> None:
    index = index_bytes("3.14.2", "3.14.1", "3.14.0")
    assert judge(index, catalog=False).blockers == (
        "index-windows.json is staged without its catalog index-windows.json.cat: stage "
        "both or neither",
    )
    alone = judge(None, catalog=True)
    assert not alone.staged and alone.blockers[0].startswith(
        "index-windows.json.cat is staged without index-windows.json"
    )
    neither = judge(None, catalog=False)
    assert neither.blockers == ()
    assert neither.describe() == "not staged: the live index is left alone"


def test_no_live_index_yet_only_needs_the_release() -> None:
    assert judge(index_bytes("3.14.2"), live=None).blockers == ()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"{not json", "is not JSON"),
        (b"[]", 'is not {"versions": [...]}'),
        (b'{"versions": {}}', 'is not {"versions": [...]}'),
        (b'{"versions": [3]}', "install 1 is not an object"),
        (b'{"versions": [{"id": "x"}]}', 'install 1 lacks "id" or "sort-version"'),
        (b'{"versions": [{"id": "", "sort-version": "1"}]}', 'lacks "id"'),
    ],
)
def test_an_invalid_index_is_refused_with_what_is_wrong(data: bytes, why: str) -> None:
    with pytest.raises(InvalidIndex, match=f"index-windows.json.*{why[:12]}"):
        parse_installs(data, "index-windows.json")
    (blocker,) = judge(data).blockers
    assert why in blocker and blocker.endswith("rebuild it")


def test_an_unreadable_live_index_or_missing_manifest_blocks() -> None:
    index = index_bytes("3.14.2", "3.14.1", "3.14.0")
    assert "the live index-windows.json is not JSON" in judge(index, live=b"<html>").blockers[0]
    assert judge(index, manifest=None).blockers == (
        "index-windows.json cannot be checked: windows-3.14.2.json is neither staged nor public",
    )


def test_the_cpython_profile_allows_the_pair_to_the_windows_role_at_the_public_root() -> None:
    profile = load_profile("cpython")
    rules = IndexRules.from_profile(profile)
    assert rules == RULES
    for name in rules.names:
        kind = profile.classify(TAG, name)
        assert (kind.kind.value, kind.role) == ("allowed", "windows")
        assert index_target(rules, "windows", name) == name
    assert index_target(rules, "windows", "amd64/index-windows.json") is None
    assert index_target(rules, "source", "index-windows.json") is None
    assert "windows-3.14.2.json" not in rules.names


def test_a_profile_with_a_wrong_install_index_table_names_the_key() -> None:
    base = load_profile("cpython").spec.model_dump()
    for table, key in (
        ({"file": "i.json", "role": "windows"}, "install_index.manifest"),
        ({"file": "a/i.json", "role": "windows", "manifest": "m"}, "install_index.file"),
        ({"file": "i.json", "role": "nobody", "manifest": "m"}, "install_index.role"),
        ({"file": "i.json", "role": "windows", "manifest": "m", "x": "y"}, "install_index.x"),
        ({"file": "", "role": "windows", "manifest": "m"}, "install_index.file must be a name"),
    ):
        profile = Profile(ProfileSpec.model_validate({**base, "install_index": table}))
        with pytest.raises(ConfigError, match=key):
            IndexRules.from_profile(profile)
    without = Profile(ProfileSpec.model_validate({**base, "install_index": {}}))
    assert IndexRules.from_profile(without) is None


def test_a_plan_records_the_live_copy_it_replaces_and_is_bound_to_it() -> None:
    from bot.domain.history import plan_from_json, plan_to_json
    from bot.domain.plan import PlanFile, PublishPlan

    exe = PlanFile("python-3.14.2.exe", "3.14.2/python-3.14.2.exe", "windows", 3, "e" * 64)
    index = PlanFile("index-windows.json", "index-windows.json", "windows", 5, "a" * 64, "b" * 64)
    plan = PublishPlan(TAG, (exe, index))
    assert plan.replacements == (index,) and plan.promoted.files == (exe,)
    assert plan_from_json(TAG, plan_to_json(plan)) == plan
    moved = PublishPlan(TAG, (exe, dataclasses.replace(index, replaces="c" * 64)))
    assert moved.digest != plan.digest  # another live copy: another confirmation
    # A plan replacing nothing keeps the digest and the JSON it always had.
    assert "replaces" not in plan_to_json(PublishPlan(TAG, (exe,)))["files"][0]


def test_a_plan_replacing_nothing_keeps_the_digest_it_always_had() -> None:
    """The digest names a publish for good: the announcement carries its first 16 digits as
    the mark a restarted bot looks for before posting again, and the journal keeps the
    confirmed one. A plan with no install index must keep the digest that plans had before
    replacements existed, or a bot upgraded mid-publish would announce the release twice."""
    from bot.domain.plan import PlanFile, PublishPlan

    exe = PlanFile("python-3.14.2.exe", "3.14.2/python-3.14.2.exe", "windows", 3, "e" * 64)
    digest = "667440fb3cd927b5cff7a050cd37887e5569635c55726328edbc572bfe04b402"
    assert PublishPlan(TAG, (exe,)).digest == digest
