"""What the python.org client asks python.org, against the API double: how often it looks
things up, what a refusal names, and deletes whose answers were lost or refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError
from bot.ports import RegistryReport
from bot.pydotorg.registry import PydotorgRegistry
from tests.doubles.pydotorg import API, PydotorgDouble
from tests.registry.test_registry import KEY, Sleeps, make_plan, registry

TAG = ReleaseTag.parse("3.14.1")
STALE_URL = "https://www.python.org/ftp/python/3.14.1/old.exe"


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        yield double


def lookups(api: PydotorgDouble, kind: str) -> list[dict[str, str]]:
    """The queries of the GETs of ``downloads/KIND/`` python.org received."""
    return [
        {key: values[-1] for key, values in r.query.items()}
        for r in api.requests
        if r.method == "GET" and r.path == f"{API}downloads/{kind}/"
    ]


# -- look-ups -----------------------------------------------------------------------------------


def test_an_api_url_without_its_trailing_slash_reaches_the_api(
    api: PydotorgDouble, profile: Profile
) -> None:
    api.add_release("Python 3.14.1")
    reg = PydotorgRegistry(api.url.rstrip("/"), f"rm:{KEY}", profile)

    reg.preflight(TAG)

    assert lookups(api, "release") == [{"name": "Python 3.14.1"}]
    assert all(r.status == 200 for r in api.requests)


def test_a_sync_after_the_preflight_looks_up_the_release_and_oses_no_more(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    reg = registry(api, profile, sleeps)
    reg.preflight(TAG)
    api.requests.clear()

    assert reg.sync(make_plan(profile, "3.14.1", {})) == RegistryReport(created=12)

    assert lookups(api, "release") == [] and lookups(api, "os") == []


def test_a_second_preflight_asks_python_org_again(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    pk = api.add_release("Python 3.14.1")
    reg = registry(api, profile, sleeps)
    reg.preflight(TAG)
    del api.releases[pk]  # an admin deleted the release since

    with pytest.raises(RegistryError, match=r"python\.org has no release 'Python 3\.14\.1'"):
        reg.preflight(TAG)


def test_check_reads_one_operating_system_and_reports_nothing_when_all_is_well(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    assert registry(api, profile, sleeps).check() == []

    assert [(r.method, r.path, r.status) for r in api.requests] == [
        ("GET", f"{API}downloads/os/", 200)
    ]
    assert lookups(api, "os") == [{"limit": "1"}]


def test_check_with_a_refused_key_says_what_it_tried(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    (problem,) = registry(api, profile, sleeps, auth="rm:wrong-key").check()

    assert problem.startswith("pydotorg: python.org refused the credentials of API user 'rm'")
    assert "to look up the operating systems (HTTP 401" in problem
    assert "wrong-key" not in problem


def test_a_403_is_taken_as_a_refused_key(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    # A 403 (a front end refusing the key, say) needs the same fix as a 401.
    api.add_release("Python 3.14.1")
    api.fail("list", status=403)

    with pytest.raises(RegistryError) as caught:
        registry(api, profile, sleeps).preflight(TAG)

    message = str(caught.value)
    assert "refused the credentials of API user 'rm' to look up release 'Python 3.14.1'" in message
    assert "(HTTP 403: injected fault)" in message and "'user:apikey' of a staff user" in message


def test_a_refused_os_look_up_names_the_os(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    api.fail("list", nth=2, status=400)  # the release is found, the first OS is not

    with pytest.raises(RegistryError, match=r"refused to look up OS 'source' \(HTTP 400"):
        registry(api, profile, sleeps).preflight(TAG)


def test_a_refused_listing_of_the_releases_files_says_so(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    reg = registry(api, profile, sleeps)
    reg.preflight(TAG)
    api.fail("list", status=400)

    with pytest.raises(RegistryError, match=r"refused to look up the release's files \(HTTP 400"):
        reg.sync(make_plan(profile, "3.14.1", {}))
    assert api.writes == []


# -- a create whose answer was lost --------------------------------------------------------------


def add_records_of_another_release(api: PydotorgDouble, count: int) -> None:
    other = api.add_release("Python 3.14.0")
    for n in range(count):
        api.add_file(
            name=f"old {n}", slug=f"old-{n}", url=f"https://www.python.org/old/{n}",
            os=f"{API}downloads/os/1/", release=f"{API}downloads/release/{other}/",
        )  # fmt: skip


def test_a_lost_create_is_recognized_among_more_records_than_one_page(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    # python.org lists 20 records a page: the record made by the lost attempt is found by slug.
    api.add_release("Python 3.14.1")
    add_records_of_another_release(api, 30)
    api.fail("create", nth=2, status=502, commit=True)

    assert registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {})) == (
        RegistryReport(created=12)
    )
    assert len(api.files("Python 3.14.1")) == 12


def test_a_refused_look_up_after_a_lost_create_names_the_record(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    reg = registry(api, profile, sleeps)
    reg.preflight(TAG)
    api.fail("create", status=502, commit=True)
    api.fail("list", nth=2, status=400)  # after the release's files: the look-up by slug

    with pytest.raises(RegistryError) as caught:
        reg.sync(make_plan(profile, "3.14.1", {}))

    assert "refused to look up record '3141-" in str(caught.value)


# -- deletes ------------------------------------------------------------------------------------


def registered_with_a_stale_record(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> tuple[PublishPlan, int]:
    """3.14.1 registered, plus one record no plan wants (its pk); the requests forgotten."""
    pk = api.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", {})
    registry(api, profile, sleeps).sync(plan)
    stale = api.add_file(
        name="Old installer", slug="3141-old", url=STALE_URL,
        os=f"{API}downloads/os/2/", release=f"{API}downloads/release/{pk}/",
    )  # fmt: skip
    api.requests.clear()
    return plan, stale


def test_a_delete_whose_answer_was_lost_counts_as_done(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    plan, _ = registered_with_a_stale_record(api, profile, sleeps)
    api.fail("delete", status=502, commit=True)  # deleted, but the answer was a 502

    assert registry(api, profile, sleeps).sync(plan) == RegistryReport(deleted=1, unchanged=12)
    assert [r.status for r in api.writes] == [502, 404]
    assert STALE_URL not in [f["url"] for f in api.files("Python 3.14.1")]


def test_a_delete_failing_every_attempt_is_an_error(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    plan, _ = registered_with_a_stale_record(api, profile, sleeps)
    api.fail("delete", status=503, times=3)

    with pytest.raises(RegistryError, match="HTTP 503"):
        registry(api, profile, sleeps).sync(plan)
    assert STALE_URL in [f["url"] for f in api.files("Python 3.14.1")]


def test_a_refused_delete_names_the_record_and_the_servers_reason(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    plan, stale = registered_with_a_stale_record(api, profile, sleeps)
    # Listed at an address python.org does not know: the DELETE is a 404 without a body.
    api.release_files[stale]["resource_uri"] = f"{API}downloads/release_file/999/"

    with pytest.raises(RegistryError) as caught:
        registry(api, profile, sleeps).sync(plan)

    message = str(caught.value)
    assert f"python.org refused to delete the record 'Old installer' ({STALE_URL})" in message
    assert "(HTTP 404: Not Found)" in message
