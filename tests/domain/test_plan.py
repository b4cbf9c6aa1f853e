"""The publish plan: every present file of every role, where it goes, in which order, and a
digest that a confirmation code is bound to."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest

from bot.domain.claims import Claim
from bot.domain.files import StagedFile
from bot.domain.plan import PlanFile, PublishPlan, make_plan
from bot.domain.profile import Profile, load_profile
from bot.domain.readiness import compute_readiness
from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import ABSENT, IndexVerdict

T0 = 1_800_000_000.0


@pytest.fixture(scope="module")
def cpython() -> Profile:
    return load_profile("cpython")


def sha(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()


def plan_for(profile: Profile, tag: str, extras: tuple[str, ...] = ()) -> PublishPlan:
    parsed = ReleaseTag.parse(tag)
    paths = [f.path for f in profile.expected(parsed)] + list(extras)
    listing = {p: StagedFile(p, 100 + i, T0) for i, p in enumerate(paths)}
    claims = {role: Claim(role, "hugo", T0, ()) for role in profile.roles_for(parsed)}
    readiness = compute_readiness(profile, parsed, listing, previous=listing, claims=claims)
    assert readiness.publishable, readiness.blockers
    return make_plan(profile, readiness, listing, {p: sha(p) for p in paths})


EXTRAS = (
    "Python-3.14.1.tgz.sigstore",
    "Python-3.14.1.tgz.spdx.json",
    "python-3.14.1-amd64.exe.sigstore",
    "windows-3.14.1.json.sigstore",
    "amd64/core.msi",
    "amd64/sub/core_d.msi",
    "python-3.14.1-amd64.zip",
    "docs/python-3.14.1-docs.epub.sigstore",
)


def test_the_plan_covers_every_present_file_of_every_role(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)

    expected = {f.path for f in cpython.expected(ReleaseTag.parse("3.14.1"))} | set(EXTRAS)
    assert {f.path for f in plan.files} == expected
    assert len(plan.files) == len(expected)  # no file twice


def test_each_file_keeps_its_role_size_and_digest(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)

    by_path = {f.path: f for f in plan.files}
    assert by_path["amd64/core.msi"].role == "windows"
    assert by_path["Python-3.14.1.tgz.spdx.json"].role == "source"
    assert by_path["docs/python-3.14.1-docs.epub.sigstore"].role == "docs"
    assert by_path["python-3.14.1-macos11.pkg"].sha256 == sha("python-3.14.1-macos11.pkg")
    assert plan.total_size == sum(f.size for f in plan.files)
    assert set(plan.by_role()) == {"source", "docs", "windows", "macos"}
    assert len(plan.by_role()["docs"]) == 8


def test_targets_put_artifacts_under_the_version_and_docs_under_doc_tag(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)

    targets = {f.path: f.target for f in plan.files}
    assert targets["python-3.14.1.exe"] == "3.14.1/python-3.14.1.exe"
    assert targets["amd64/sub/core_d.msi"] == "3.14.1/amd64/sub/core_d.msi"
    assert targets["docs/python-3.14.1-docs.epub"] == "doc/3.14.1/python-3.14.1-docs.epub"
    assert targets["docs/python-3.14.1-docs.epub.sigstore"] == (
        "doc/3.14.1/python-3.14.1-docs.epub.sigstore"
    )


def test_a_prerelease_goes_into_the_shared_version_folder(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.0rc1", ("amd64rc1/core.msi",))

    targets = {f.path: f.target for f in plan.files}
    assert targets["python-3.14.0rc1.exe"] == "3.14.0/python-3.14.0rc1.exe"
    assert targets["amd64rc1/core.msi"] == "3.14.0/amd64rc1/core.msi"
    assert targets["docs/python-3.14.0rc1-docs.epub"] == "doc/3.14.0rc1/python-3.14.0rc1-docs.epub"


def test_docs_come_first_then_artifacts_then_indexes_last(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)

    phases = [
        0 if f.target.startswith("doc/") else 2 if cpython.is_index(f.path) else 1
        for f in plan.files
    ]
    assert phases == sorted(phases)
    assert phases.count(0) == 8
    assert [f.path for f in plan.files if cpython.is_index(f.path)] == ["windows-3.14.1.json"]
    assert plan.files[-1].path == "windows-3.14.1.json"


def test_the_index_comes_after_its_own_sidecar(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)

    paths = [f.path for f in plan.files]
    assert paths.index("windows-3.14.1.json.sigstore") < paths.index("windows-3.14.1.json")


def test_a_beta_plan_has_no_docs(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.0b1")

    assert not [f for f in plan.files if f.role == "docs" or f.target.startswith("doc/")]


def test_the_digest_is_stable_for_the_same_files(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)
    again = plan_for(cpython, "3.14.1", EXTRAS)
    shuffled = PublishPlan(plan.tag, tuple(reversed(plan.files)))

    assert plan.digest == again.digest == shuffled.digest
    assert len(plan.digest) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"size": 1},
        {"sha256": "0" * 64},
        {"path": "python-3.14.1-macos11-renamed.pkg"},
        {"target": "3.14.1/elsewhere.pkg"},
    ],
)
def test_the_digest_changes_when_any_file_changes(cpython: Profile, change: dict[str, Any]) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)
    files = [
        dataclasses.replace(f, **change) if f.path == "python-3.14.1-macos11.pkg" else f
        for f in plan.files
    ]

    assert PublishPlan(plan.tag, tuple(files)).digest != plan.digest


def test_the_digest_changes_when_a_file_is_added_or_dropped(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1", EXTRAS)

    assert plan_for(cpython, "3.14.1").digest != plan.digest
    assert PublishPlan(plan.tag, plan.files[:-1]).digest != plan.digest


def test_the_digest_is_bound_to_the_tag(cpython: Profile) -> None:
    plan = plan_for(cpython, "3.14.1")

    assert PublishPlan(ReleaseTag.parse("3.14.2"), plan.files).digest != plan.digest


def test_a_plan_file_survives_json(cpython: Profile) -> None:
    for f in plan_for(cpython, "3.14.1", EXTRAS).files:
        assert PlanFile.from_json(f.to_json()) == f


def test_the_install_index_replaces_the_live_one_at_the_root_and_goes_last(
    cpython: Profile,
) -> None:
    parsed = ReleaseTag.parse("3.14.1")
    extras = ("index-windows.json", "index-windows.json.cat")
    paths = [f.path for f in cpython.expected(parsed)] + list(extras)
    listing = {p: StagedFile(p, 100 + i, T0) for i, p in enumerate(paths)}
    claims = {role: Claim(role, "hugo", T0, ()) for role in cpython.roles_for(parsed)}
    readiness = compute_readiness(cpython, parsed, listing, previous=listing, claims=claims)
    live = {"index-windows.json": "c" * 64}  # the catalog is not live yet

    plan = make_plan(cpython, readiness, listing, {p: sha(p) for p in paths}, live)

    last = plan.files[-2:]
    assert [(f.path, f.target, f.role) for f in last] == [
        ("index-windows.json", "index-windows.json", "windows"),
        ("index-windows.json.cat", "index-windows.json.cat", "windows"),
    ]
    assert [f.replaces for f in last] == ["c" * 64, ABSENT]
    assert all(f.replaces == "" for f in plan.files[:-2])
    assert plan.files[-3].path == "windows-3.14.1.json"  # the release's own index before them


def test_a_shared_index_names_in_the_plan_the_releases_it_waits_for(cpython: Profile) -> None:
    parsed = ReleaseTag.parse("3.14.1")
    paths = [f.path for f in cpython.expected(parsed)]
    claims = {role: Claim(role, "hugo", T0, ()) for role in cpython.roles_for(parsed)}
    shared = IndexVerdict(True, shared_with=("3.13.11",))

    def plan_of(staged: list[str]) -> PublishPlan:
        listing = {p: StagedFile(p, 100 + i, T0) for i, p in enumerate(staged)}
        readiness = compute_readiness(cpython, parsed, listing, previous=listing, claims=claims)
        readiness = dataclasses.replace(readiness, install_index=shared)
        return make_plan(cpython, readiness, listing, {p: sha(p) for p in staged})

    with_index = plan_of([*paths, "index-windows.json", "index-windows.json.cat"])
    assert with_index.index_shared_with == ("3.13.11",)
    # Without the index in the plan (nothing replaces a live file), nothing waits.
    assert plan_of(paths).index_shared_with == ()
