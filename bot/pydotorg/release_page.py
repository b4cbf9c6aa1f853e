"""Making a release's page public on python.org, through the downloads API v2 (Django REST
framework): API v1 cannot change a Release (it answers PATCH with 405).

:class:`ReleasePageClient` implements :class:`bot.ports.ReleasePage`. It sets the Release's
``is_published``, ``pre_release`` (from the tag) and, for the newest final only,
``is_latest``. python.org then clears ``is_latest`` on every other release of the same major
version (its ``promote_latest_release`` signal), so the client reads every release's flag
before and after its change and reports any change other than that one.

Authentication is ``Authorization: Token KEY`` of a staff user; the key is never sent to
another site and never appears in logs, errors or ``repr``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any, Final

import httpx

from bot.domain.profile import Profile
from bot.domain.records import PydotorgSettings
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError, TagError
from bot.http_client import HttpClient, RetryPolicy
from bot.ports import ReleasePageReport
from bot.pydotorg.api import PydotorgApi

_log = logging.getLogger(__name__)

RELEASES: Final = "downloads/release/"
_VERSION_RE = re.compile(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?")

Release = dict[str, Any]


def v2_url(v1_url: str) -> str:
    """The API v2 root next to a configured API v1 root (``…/api/v1/`` → ``…/api/v2/``)."""
    base = v1_url if v1_url.endswith("/") else v1_url + "/"
    return str(httpx.URL(base).join("../v2/"))


class ReleasePageClient(PydotorgApi):
    """python.org's Release records through API v2 (``api_url``: ``…/api/v2/``).

    ``token`` is read from the environment by the caller; ``token_source`` names where it
    came from, for error messages. Blocking: run it in a worker thread.
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        profile: Profile,
        *,
        token_source: str = "the python.org API v2 token",
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._api_url = api_url if api_url.endswith("/") else api_url + "/"
        self._token = token
        self._token_source = token_source
        self._settings = PydotorgSettings.from_profile(profile)
        self._http = HttpClient(
            origin=self._api_url,  # the token is never sent anywhere else
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            transport=transport,
            timeout=timeout,
            retry=retry,
        )

    def __repr__(self) -> str:
        return f"ReleasePageClient(api_url={self._api_url!r})"

    # -- the port

    def preflight(self, tag: ReleaseTag) -> None:
        """Check the token may see the Release of ``tag``: an unpublished release is listed
        to staff users only, so this also tells a staff token from another."""
        name = self._settings.release_name(tag)
        found = self._list({"name": name}, f"release {name!r}")
        if not any(r.get("name") == name for r in found):
            raise RegistryError(
                f"python.org (API v2) shows no release '{name}' to the token in "
                f"{self._token_source}: create it in the admin, and give a staff user's "
                "token (an unpublished release is visible to staff only)."
            )

    def check(self) -> list[str]:
        """Reach the API with the token (one read: a token python.org does not know is
        refused even for reads)."""
        try:
            self._list({"name": "relbot check"}, "the releases")
        except RegistryError as err:
            return [f"pydotorg.token_env: {err}"]
        return []

    def publish(self, tag: ReleaseTag) -> ReleasePageReport:
        """Make the Release of ``tag`` public; a no-op when it already is as wanted. Raises
        :class:`RegistryError` when python.org refuses, or does not keep what was set."""
        name = self._settings.release_name(tag)
        before = self._list({}, "the releases")
        ours = _only(before, name)
        wanted: dict[str, bool] = {"is_published": True, "pre_release": tag.is_prerelease}
        demoted = [
            str(r["name"])
            for r in before
            if r["is_latest"] and r is not ours and r.get("version") == ours.get("version")
        ]
        if self._is_newest(tag, before, ours):
            wanted["is_latest"] = True
        if all(ours.get(key) == value for key, value in wanted.items()):
            return ReleasePageReport(changed=False, is_latest=bool(ours.get("is_latest")))
        answer = self._patch(ours, wanted, name)
        if any(answer.get(key) != value for key, value in wanted.items()):
            raise RegistryError(
                f"python.org did not keep the flags set on '{name}' ({_flags(wanted)}); "
                "check the release in the admin."
            )
        after = self._list({}, "the releases")
        latest = bool(wanted.get("is_latest"))
        expected = set(demoted) if latest else set()
        unexpected = _latest_changes(before, after, skip=name) - expected
        report = ReleasePageReport(
            changed=True,
            is_latest=latest,
            demoted=tuple(sorted(expected & _latest_changes(before, after, skip=name))),
            unexpected=tuple(sorted(unexpected)),
        )
        _log.info("python.org release page of %s: %s", tag, report)
        return report

    # -- rules

    def _is_newest(self, tag: ReleaseTag, releases: list[Release], ours: Release) -> bool:
        """Whether ``tag`` is a final newer than every latest release of its major version
        (the newest feature series' final): only then is it python.org's latest."""
        if tag.is_prerelease:
            return False
        for other in releases:
            if (
                other is ours
                or not other["is_latest"]
                or other.get("version") != ours.get("version")
            ):
                continue
            found = _VERSION_RE.search(str(other["name"]))
            try:
                if found is None or not ReleaseTag.parse(found.group()) < tag:
                    return False
            except TagError:
                return False
        return True

    # -- HTTP

    def _list(self, params: Mapping[str, str], what: str) -> list[Release]:
        url = self._url(RELEASES).copy_merge_params(dict(params))
        response, _ = self._send("GET", url, what=f"look up {what}")
        if response.status_code != 200:
            raise self._refused(response, f"look up {what}")
        body = _json(response, what)
        # API v2 is not paginated on python.org: the answer is the whole list.
        if not isinstance(body, list) or not all(_is_release(r) for r in body):
            raise RegistryError(f"python.org answered the look-up of {what} unexpectedly.")
        return body

    def _patch(self, ours: Release, wanted: Mapping[str, bool], name: str) -> Release:
        what = f"make the release '{name}' public"
        response, _ = self._send(
            "PATCH", self._url(str(ours["resource_uri"])), what=what, body=wanted
        )
        if response.status_code != 200:
            raise self._refused(response, what)
        body = _json(response, what)
        if not _is_release(body):
            raise RegistryError(f"python.org answered the change of '{name}' unexpectedly.")
        return dict(body)

    def _refused(self, response: httpx.Response, what: str) -> RegistryError:
        message = _server_message(response).replace(self._token, "***")
        if response.status_code in (401, 403):
            return RegistryError(
                f"python.org refused the API v2 token to {what} (HTTP {response.status_code}: "
                f"{message}); check {self._token_source}: the token of a staff user."
            )
        return RegistryError(
            f"python.org refused to {what} (HTTP {response.status_code}: {message})."
        )


def _only(releases: list[Release], name: str) -> Release:
    found = [r for r in releases if r.get("name") == name]
    if len(found) != 1:
        raise RegistryError(
            f"python.org (API v2) lists {len(found)} releases named '{name}', not one; "
            "fix it in the admin."
        )
    return found[0]


def _latest_changes(before: list[Release], after: list[Release], *, skip: str) -> set[str]:
    """The releases (but ``skip``) whose ``is_latest`` differs between two listings."""
    was = {str(r["name"]): bool(r["is_latest"]) for r in before}
    now = {str(r["name"]): bool(r["is_latest"]) for r in after}
    return {
        n for n in was.keys() | now.keys() if n != skip and was.get(n, False) != now.get(n, False)
    }


def _flags(wanted: Mapping[str, bool]) -> str:
    return ", ".join(f"{key} = {str(value).lower()}" for key, value in wanted.items())


def _is_release(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("resource_uri"), str)
        and isinstance(value.get("is_latest"), bool)
    )


def _json(response: httpx.Response, what: str) -> Any:
    try:
        return response.json()
    except ValueError as err:
        raise RegistryError(
            f"python.org answered the request to {what} with something that is not JSON."
        ) from err


def _server_message(response: httpx.Response) -> str:
    """The reason Django REST framework gave (``detail``, or the fields' errors)."""
    try:
        body = response.json()
    except ValueError:
        return " ".join(response.text.split())[:300] or response.reason_phrase or "no reason"
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return str(body["detail"])[:300]
    return json.dumps(body)[:300]
