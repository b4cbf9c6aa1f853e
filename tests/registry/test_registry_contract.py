"""The registry and the release page against python.org twice: relbot's double and python.org's
own app (pythondotorg on PostgreSQL), one suite, the same assertions. Where the two disagree,
the double is wrong (tests/test_pydotorg_probes.py holds it to the real answers)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.records import PydotorgSettings, planned_records
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError
from bot.http_client import RetryPolicy
from bot.ports import RegistryReport
from bot.pydotorg.registry import PydotorgRegistry
from bot.pydotorg.release_page import ReleasePageClient, v2_url
from tests.registry.python_org import RM_AUTH, TOKEN, PythonOrg
from tests.registry.test_registry import Sleeps, make_plan

TAG = ReleaseTag.parse("3.14.1")
SIG = (".sigstore", ".sig", ".crt")
SIDECARS = {"source": (*SIG, ".spdx.json"), "windows": SIG, "macos": (".sigstore",)}


def registry(
    pydotorg: PythonOrg,
    profile: Profile,
    sleeps: Sleeps | None = None,
    *,
    max_wait: float = 900,
    notices: list[str] | None = None,
) -> PydotorgRegistry:
    policy = RetryPolicy(
        attempts=4, max_wait=max_wait, sleep=sleeps if sleeps is not None else time.sleep
    )
    return PydotorgRegistry(
        pydotorg.url,
        RM_AUTH,
        profile,
        retry=policy,
        notice=None if notices is None else notices.append,
    )


def assert_matches_plan(pydotorg: PythonOrg, profile: Profile, plan: PublishPlan) -> None:
    """python.org holds exactly the plan's records, every field as planned."""
    settings = PydotorgSettings.from_profile(profile)
    planned = {r.url.rsplit("/", 1)[-1]: r for r in planned_records(settings, profile, plan)}
    got = pydotorg.records(settings.release_name(plan.tag))
    assert sorted(got) == sorted(planned)
    for name, want in planned.items():
        have = got[name]
        sidecars = dict(want.sidecars)
        for key in settings.sidecars.values():
            assert have[key] == sidecars.get(key, ""), (name, key)
        fields = ("name", "slug", "os", "description", "is_source", "url", "sha256_sum")
        assert {k: have[k] for k in fields} == {k: getattr(want, k) for k in fields}, name
        assert (int(have["filesize"]), have["download_button"]) == (
            want.filesize,
            want.download_button,
        ), name


def respun(plan: PublishPlan, name: str) -> PublishPlan:
    """``plan`` with new bytes for the file ``name``."""
    return replace(
        plan,
        files=tuple(
            replace(f, sha256="f" * 64, size=f.size + 1) if f.target.endswith("/" + name) else f
            for f in plan.files
        ),
    )


# -- the happy paths ----------------------------------------------------------------------------


def test_a_release_is_registered_from_empty_then_a_second_sync_writes_nothing(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", SIDECARS)
    reg = registry(pydotorg, profile, sleeps)
    reg.preflight(TAG)

    assert reg.sync(plan) == RegistryReport(created=12)
    assert_matches_plan(pydotorg, profile, plan)

    written = len(pydotorg.proxy.writes())
    assert registry(pydotorg, profile, sleeps).sync(plan) == RegistryReport(unchanged=12)
    assert len(pydotorg.proxy.writes()) == written and sleeps == []


def test_a_changed_file_is_replaced_and_a_file_gone_is_deleted(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    extra = (("windows", "python-3.14.1-amd64.zip"),)
    plan = make_plan(profile, "3.14.1", SIDECARS, extra=extra)
    registry(pydotorg, profile, sleeps).sync(plan)
    smaller = make_plan(profile, "3.14.1", SIDECARS)  # the zip is not registered: no rule
    new = respun(smaller, "Python-3.14.1.tgz")

    report = registry(pydotorg, profile, sleeps).sync(new)

    assert report == RegistryReport(replaced=1, unchanged=11)
    assert_matches_plan(pydotorg, profile, new)
    assert pydotorg.records("Python 3.14.1")["Python-3.14.1.tgz"]["sha256_sum"] == "f" * 64


def test_a_stale_record_is_deleted(pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", SIDECARS)
    registry(pydotorg, profile, sleeps).sync(plan)
    gone = "python-3.14.1-embed-arm64.zip"
    smaller = replace(plan, files=tuple(f for f in plan.files if not f.target.endswith(gone)))

    report = registry(pydotorg, profile, sleeps).sync(smaller)

    assert report == RegistryReport(deleted=1, unchanged=11)
    assert_matches_plan(pydotorg, profile, smaller)


def with_button_on(profile: Profile, rule_name: str, os: str) -> Profile:
    """The profile with the download button of ``os`` on the rule ``rule_name`` only."""
    table = dict(profile.spec.pydotorg)
    table["rules"] = [
        {**rule, "download_button": rule["name"] == rule_name} if rule["os"] == os else rule
        for rule in table["rules"]
    ]
    return Profile(profile.spec.model_copy(update={"pydotorg": table}))


def test_the_download_button_moves_to_another_file(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", SIDECARS)
    registry(pydotorg, profile, sleeps).sync(plan)
    moved = with_button_on(profile, "Windows installer (ARM64)", "windows")

    report = registry(pydotorg, moved, sleeps).sync(plan)

    assert report == RegistryReport(replaced=2, unchanged=10)
    assert_matches_plan(pydotorg, moved, plan)
    buttons = [n for n, r in pydotorg.records("Python 3.14.1").items() if r["download_button"]]
    assert sorted(buttons) == [
        "Python-3.14.1.tar.xz",
        "python-3.14.1-arm64.exe",
        "python-3.14.1-macos11.pkg",
    ]


# -- the release page (API v2) ------------------------------------------------------------------


def test_a_new_final_becomes_the_only_latest_and_a_prerelease_never(
    pydotorg: PythonOrg, profile: Profile
) -> None:
    pydotorg.add_release("Python 3.13.9", published=True)
    pydotorg.add_release("Python 3.14.0", published=True, latest=True)
    pydotorg.add_release("Python 3.14.1")
    pydotorg.add_release("Python 3.15.0b2")
    page = ReleasePageClient(
        v2_url(pydotorg.url), TOKEN, profile, retry=RetryPolicy(attempts=2, sleep=Sleeps())
    )

    report = page.publish(ReleaseTag.parse("3.14.1"))
    beta = page.publish(ReleaseTag.parse("3.15.0b2"))

    assert report.is_latest and report.demoted == ("Python 3.14.0",)
    assert pydotorg.latest() == ["Python 3.14.1"]  # python.org cleared 3.14.0's flag
    shown = pydotorg.release("Python 3.15.0b2")
    assert (shown["is_published"], shown["pre_release"], shown["is_latest"]) == (True, True, False)
    assert not beta.is_latest
    assert page.publish(ReleaseTag.parse("3.14.1")).changed is False  # nothing left to do


# -- refusals -----------------------------------------------------------------------------------


def test_a_validation_error_is_quoted_and_nothing_is_written(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    table = {**profile.spec.pydotorg, "files_url": "https://downloads.example.org/"}
    elsewhere = Profile(profile.spec.model_copy(update={"pydotorg": table}))

    with pytest.raises(RegistryError) as caught:
        registry(pydotorg, elsewhere, sleeps).sync(make_plan(elsewhere, "3.14.1", {}))

    assert str(caught.value).endswith(
        "(HTTP 400: url: Release file URLs must begin with 'https://www.python.org/'.)."
    )
    assert pydotorg.records("Python 3.14.1") == {} and sleeps == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"size": 2**31}, "is 2147483648 bytes; python.org stores a file size below 2**31"),
        (
            {"target": "3.14.1/python-3.14.1-" + "x" * 150 + "-amd64.exe"},
            "url of 3.14.1/python-3.14.1-xxx",
        ),
    ],
)
def test_what_python_org_cannot_store_is_refused_before_any_write(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps, change: dict[str, Any], words: str
) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", {})
    plan = replace(
        plan,
        files=tuple(
            replace(f, **change) if f.target.endswith("3.14.1-amd64.exe") else f for f in plan.files
        ),
    )

    with pytest.raises(RegistryError) as caught:
        registry(pydotorg, profile, sleeps).sync(plan)

    assert words in str(caught.value) and "nothing was written" in str(caught.value)
    assert pydotorg.proxy.writes() == []


# -- faults -------------------------------------------------------------------------------------


def test_a_create_whose_answer_is_lost_is_found_not_sent_again(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", SIDECARS)
    pydotorg.proxy.drop_answer("POST", nth=3)  # done by python.org, the answer lost

    assert registry(pydotorg, profile, sleeps).sync(plan) == RegistryReport(created=12)

    assert_matches_plan(pydotorg, profile, plan)
    posts = [s for s in pydotorg.proxy.writes() if s[0] == "POST"]
    assert len(posts) == 12 and [s[2] for s in posts].count(None) == 1
    assert sleeps == []


def test_a_concurrent_writer_of_the_same_record_is_no_failure(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", SIDECARS)
    reg = registry(pydotorg, profile, sleeps)
    reg.preflight(TAG)
    settings = PydotorgSettings.from_profile(profile)
    second = planned_records(settings, profile, plan)[1]
    release = f"/api/v1/downloads/release/{pydotorg.release_pk('Python 3.14.1')}/"
    os_uri = pydotorg.os_uri(second.os)

    def other_writer() -> None:  # e.g. add_to_pydotorg.py run by hand, a moment earlier
        assert pydotorg.create(second.to_json(release, os_uri)).status_code == 201

    pydotorg.proxy.before("POST", nth=2, act=other_writer)

    assert reg.sync(plan) == RegistryReport(created=12)

    assert_matches_plan(pydotorg, profile, plan)
    statuses = [s[2] for s in pydotorg.proxy.writes()]
    assert statuses.count(500) == 1 and statuses.count(201) == 11  # python.org's duplicate
    assert sleeps == []


def test_a_concurrent_writer_of_another_record_is_named(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", SIDECARS)
    reg = registry(pydotorg, profile, sleeps)
    reg.preflight(TAG)
    settings = PydotorgSettings.from_profile(profile)
    second = planned_records(settings, profile, plan)[1]
    release = f"/api/v1/downloads/release/{pydotorg.release_pk('Python 3.14.1')}/"
    body = {**second.to_json(release, pydotorg.os_uri(second.os)), "sha256_sum": "0" * 64}

    def other_writer() -> None:
        assert pydotorg.create(body).status_code == 201

    pydotorg.proxy.before("POST", nth=2, act=other_writer)

    with pytest.raises(RegistryError) as caught:
        reg.sync(plan)

    message = str(caught.value)
    assert message.startswith(f"python.org could not create the record {second.name!r}")
    assert "(HTTP 500): its record /api/v1/downloads/release_file/" in message
    assert "has the same slug but differs in sha256_sum;" in message
    assert [s[2] for s in pydotorg.proxy.writes()] == [201, 500]  # never sent twice
    assert sleeps == []


def test_a_rate_limit_longer_than_the_bound_stops_with_one_sentence(
    pydotorg: PythonOrg, profile: Profile, sleeps: Sleeps
) -> None:
    pydotorg.add_release("Python 3.14.1")
    pydotorg.exhaust("rm", 3000)
    notices: list[str] = []

    with pytest.raises(RegistryError) as caught:
        registry(pydotorg, profile, sleeps, notices=notices).sync(make_plan(profile, "3.14.1", {}))

    assert str(caught.value) == (
        "python.org could not look up release 'Python 3.14.1': its rate limit for API user "
        "'rm' asks to wait 50 min, more than [pydotorg] max_wait allows (15 min); publish "
        "again later, what is registered stays."
    )
    assert sleeps == [] and notices == [] and pydotorg.proxy.writes() == []


def test_a_rate_limit_within_the_bound_is_waited_for_and_told_once(
    pydotorg: PythonOrg, profile: Profile
) -> None:
    pydotorg.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", {})
    pydotorg.exhaust("rm", 2)  # python.org's limit lifts in 2 s: really waited
    notices: list[str] = []

    assert registry(pydotorg, profile, notices=notices).sync(plan) == RegistryReport(created=12)

    assert len(notices) == 1 and notices[0].startswith(
        "python.org is rate limiting API user 'rm': the registration waits "
    )
    assert_matches_plan(pydotorg, profile, plan)
