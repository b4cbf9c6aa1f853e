"""Making a release page public through python.org's API v2, against the API double."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import httpx
import pytest

from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError
from bot.http_client import RetryPolicy
from bot.pydotorg.release_page import ReleasePageClient, v2_url
from tests.doubles.pydotorg import PydotorgDouble

TOKEN = "v2-staff-token-value"
FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)
PROFILE = load_profile("cpython")


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    tokens = {"rm": (TOKEN, True), "guest": ("plain-user-token", False)}
    with PydotorgDouble(tokens=tokens) as double:
        double.add_release("Python 3.13.9", published=True)
        double.add_release("Python 3.14.0", published=True, latest=True)
        double.add_release("pymanager 25.0", published=True, latest=True, version=100)
        yield double


def client(api: PydotorgDouble, token: str = TOKEN) -> ReleasePageClient:
    return ReleasePageClient(
        v2_url(api.url), token, PROFILE, token_source="PYDOTORG_TOKEN", retry=FAST
    )


def test_the_v2_root_sits_next_to_the_configured_v1_root() -> None:
    assert v2_url("https://www.python.org/api/v1/") == "https://www.python.org/api/v2/"
    assert v2_url("http://127.0.0.1:8000/api/v1") == "http://127.0.0.1:8000/api/v2/"


def test_a_new_final_becomes_public_and_the_only_latest_python_3(api: PydotorgDouble) -> None:
    api.add_release("Python 3.14.1")

    report = client(api).publish(ReleaseTag.parse("3.14.1"))

    page = api.release("Python 3.14.1")
    assert (page["is_published"], page["pre_release"], page["is_latest"]) == (True, False, True)
    assert api.latest() == ["Python 3.14.1"]  # python.org cleared 3.14.0's flag
    assert api.latest(100) == ["pymanager 25.0"]  # another major version keeps its own
    assert report.changed and report.is_latest
    assert report.demoted == ("Python 3.14.0",) and report.unexpected == ()
    patches = [r for r in api.requests if r.method == "PATCH"]
    assert [r.body for r in patches] == [
        {"is_published": True, "pre_release": False, "is_latest": True}
    ]


def test_a_prerelease_is_public_as_a_prerelease_and_never_latest(api: PydotorgDouble) -> None:
    api.add_release("Python 3.15.0b2")

    report = client(api).publish(ReleaseTag.parse("3.15.0b2"))

    page = api.release("Python 3.15.0b2")
    assert (page["is_published"], page["pre_release"], page["is_latest"]) == (True, True, False)
    assert api.latest() == ["Python 3.14.0"]
    assert not report.is_latest and report.demoted == ()


def test_a_final_of_an_older_series_leaves_the_latest_alone(api: PydotorgDouble) -> None:
    api.add_release("Python 3.13.10")

    report = client(api).publish(ReleaseTag.parse("3.13.10"))

    assert api.release("Python 3.13.10")["is_published"] is True
    assert api.latest() == ["Python 3.14.0"]
    assert not report.is_latest


def test_publishing_again_changes_nothing(api: PydotorgDouble) -> None:
    api.add_release("Python 3.14.1")
    client(api).publish(ReleaseTag.parse("3.14.1"))
    writes = len(api.writes)

    report = client(api).publish(ReleaseTag.parse("3.14.1"))

    assert not report.changed and report.is_latest
    assert len(api.writes) == writes


def test_another_change_of_is_latest_meanwhile_is_reported(api: PydotorgDouble) -> None:
    api.add_release("Python 3.14.1")
    # Someone saves pymanager's release as not latest while the bot is at work.
    api.after_write = lambda: api.set_latest("pymanager 25.0", False)

    report = client(api).publish(ReleaseTag.parse("3.14.1"))

    assert report.unexpected == ("pymanager 25.0",)
    assert report.demoted == ("Python 3.14.0",)


def test_a_token_that_is_not_staff_is_refused_before_anything_is_public(
    api: PydotorgDouble,
) -> None:
    api.add_release("Python 3.14.1")
    guest = client(api, "plain-user-token")

    with pytest.raises(RegistryError, match=r"no release 'Python 3\.14\.1'.*staff user's"):
        guest.preflight(ReleaseTag.parse("3.14.1"))
    client(api).preflight(ReleaseTag.parse("3.14.1"))  # the staff token sees it


def test_a_write_by_a_non_staff_token_gets_a_sentence_and_changes_nothing(
    api: PydotorgDouble,
) -> None:
    api.add_release("Python 3.14.1", published=True)  # visible to anyone, changeable by staff

    with pytest.raises(RegistryError) as caught:
        client(api, "plain-user-token").publish(ReleaseTag.parse("3.14.1"))

    assert "HTTP 403" in str(caught.value) and "PYDOTORG_TOKEN" in str(caught.value)
    assert api.latest() == ["Python 3.14.0"]


def test_an_unknown_token_is_refused_even_for_reads_and_never_shown(
    api: PydotorgDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = client(api, "not-a-token-python-org-knows")

    (problem,) = wrong.check()

    assert "HTTP 401" in problem and "Invalid token" in problem
    assert "not-a-token-python-org-knows" not in problem + caplog.text + repr(wrong)
    assert client(api).check() == []


def test_a_missing_release_is_a_sentence(api: PydotorgDouble) -> None:
    with pytest.raises(RegistryError, match=re.escape("no release 'Python 3.14.1'")):
        client(api).preflight(ReleaseTag.parse("3.14.1"))


def test_python_org_down_is_a_sentence_after_retries(api: PydotorgDouble) -> None:
    api.add_release("Python 3.14.1")
    api.fail("patch", status=503, times=5)

    with pytest.raises(
        RegistryError, match=re.escape("refused to make the release 'Python 3.14.1' public")
    ):
        client(api).publish(ReleaseTag.parse("3.14.1"))
    assert api.release("Python 3.14.1")["is_published"] is False


# -- the double enforces python.org's rules -----------------------------------------------------


def test_api_v1_refuses_to_change_a_release(api: PydotorgDouble) -> None:
    pk = api.add_release("Python 3.14.1")
    url = f"{api.url}downloads/release/{pk}/"
    headers = {"Authorization": "ApiKey rm:key", "Content-Type": "application/json"}

    answer = httpx.patch(url, headers=headers, content=b'{"is_published": true}')

    assert answer.status_code == 405
    assert api.release("Python 3.14.1")["is_published"] is False


def test_api_v2_writes_need_a_staff_token_and_its_required_fields(api: PydotorgDouble) -> None:
    pk = api.add_release("Python 3.14.1")
    url = f"{api.base_url}api/v2/downloads/release/{pk}/"
    json_type = {"Content-Type": "application/json"}
    staff = {"Authorization": f"Token {TOKEN}", **json_type}

    anonymous = httpx.patch(url, headers=json_type, content=b'{"is_published": true}')
    guest = httpx.patch(
        url,
        headers={"Authorization": "Token plain-user-token", **json_type},
        content=b'{"is_published": true}',
    )
    no_name = httpx.put(url, headers=staff, content=b'{"is_published": true}')
    not_a_boolean = httpx.patch(url, headers=staff, content=b'{"is_published": "yes"}')

    assert anonymous.status_code == 401
    assert anonymous.json() == {"detail": "Authentication credentials were not provided."}
    assert guest.status_code == 403
    assert no_name.status_code == 400
    assert no_name.json() == {  # as python.org: a full update needs both
        "name": ["This field is required."],
        "slug": ["This field is required."],
    }
    assert not_a_boolean.status_code == 400
    assert api.release("Python 3.14.1")["is_published"] is False
    hidden = httpx.get(url)  # an unpublished release is not shown to anyone but staff
    assert hidden.status_code == 404
