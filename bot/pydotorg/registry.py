"""The python.org release database ("addfiles"): a client of the downloads API v1 (Tastypie).

:class:`PydotorgRegistry` implements :class:`bot.ports.Registry`. Which published file becomes
which ``ReleaseFile`` record, and in which order the writes go, is decided in
:mod:`bot.domain.records`; nothing here knows CPython. What this module knows is the python.org
API (fields, filters, Tastypie pagination, its answers).

Unlike ``add_to_pydotorg.py``, which deletes every record of the release and re-creates them
(a failure midway leaves the release with no files), :meth:`PydotorgRegistry.sync` works by
difference: records that already match are left alone, so running it again writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.records import (
    Create,
    PydotorgSettings,
    Record,
    differs,
    planned_records,
    schedule,
)
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RegistryError
from bot.http_client import HttpClient, RequestBudget, RetryPolicy
from bot.ports import RegistryReport
from bot.pydotorg.api import PydotorgApi, server_message
from bot.pydotorg.rate_limit import BudgetRefusal, SyncNotices, rate_limit_refusal
from bot.pydotorg.storable import check_storable

_log = logging.getLogger(__name__)

_PAGE_SIZE: Final = 100
_MAX_PAGES: Final = 1000


# --- the client -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ReleaseTarget:
    """What a lookup found: the Release's resource URI and pk, and each OS's resource URI."""

    release_uri: str
    release_pk: str
    os_uris: Mapping[str, str]


class PydotorgRegistry(PydotorgApi):
    """python.org's release database through API v1 (``Authorization: ApiKey user:key``).

    ``auth`` is ``"user:apikey"`` as read from the environment by the caller; ``auth_source``
    names where it came from (an env var) for error messages. Blocking: run it in a worker
    thread; concurrent syncs share it, paced by its ``budget`` (``api_v1_budget``). The key
    never appears in logs, exceptions or ``repr``.
    """

    _notices: SyncNotices

    def __init__(
        self,
        api_url: str,
        auth: str,
        profile: Profile,
        *,
        auth_source: str = "the python.org API key",
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        notice: Callable[[str], None] | None = None,
        budget: RequestBudget | None = None,
    ) -> None:
        if auth.count(":") != 1 or not all(part.strip() for part in auth.split(":")):
            raise ConfigError(
                f"{auth_source} must be 'user:apikey' with exactly one ':' "
                "(the value is not shown)."
            )
        self._user, self._secret = auth.split(":")
        self._api_url = httpx.URL(api_url if api_url.endswith("/") else api_url + "/")
        self._auth_source = auth_source
        self._profile = profile
        self.settings = PydotorgSettings.from_profile(profile)
        self._http = HttpClient(
            origin=str(self._api_url),  # the key is never sent anywhere else
            headers={
                "Authorization": f"ApiKey {self._user}:{self._secret}",
                "Accept": "application/json",
            },
            transport=transport,
            timeout=timeout,
            retry=retry,
            budget=budget,
        )
        self._targets: dict[str, _ReleaseTarget] = {}
        self._notices = SyncNotices(self._user, notice, budget)  # a wait is told once per sync

    def __repr__(self) -> str:
        return f"PydotorgRegistry(api_url={str(self._api_url)!r}, user={self._user!r})"

    # -- the port

    def preflight(self, tag: ReleaseTag) -> None:
        """Check that the Release of ``tag`` exists, the credentials are accepted and every
        OS the rules name exists. Raises :class:`RegistryError` with the fix.

        API v1 cannot tell whether a key may write without writing; a key that is valid
        but not staff is refused at the first write, with a clear error.
        """
        self._targets.pop(str(tag), None)
        self._target(tag)

    def check(self) -> list[str]:
        """Reach the API with these credentials (one read); each problem a sentence."""
        try:
            self._get_objects("downloads/os/", {"limit": "1"}, "the operating systems")
        except RegistryError as err:
            return [f"pydotorg: {err}"]
        return []

    def sync(
        self, plan: PublishPlan, *, notice: Callable[[str], None] | None = None
    ) -> RegistryReport:
        """Make the release's records match ``plan``, by difference, in the order of
        :func:`bot.domain.records.schedule` (create before delete). Raises
        :class:`RegistryError`; a run that stopped midway is finished by running it again.
        """
        with self._notices.sync(notice):  # another publish may sync in another thread
            return self._sync(plan)

    def _sync(self, plan: PublishPlan) -> RegistryReport:
        target = self._target(plan.tag)
        wanted: dict[str, Record] = {}
        planned_all = planned_records(self.settings, self._profile, plan)
        check_storable(planned_all)
        for planned in planned_all:
            # _target found (or refused) every OS the rules use, and each record's OS is its rule's.
            wanted[planned.url] = planned.to_json(target.release_uri, target.os_uris[planned.os])
        existing = list(self._release_files(target))
        steps, unchanged = schedule(existing, wanted, tuple(self.settings.sidecars.values()))
        created = replaced = deleted = 0
        for step in steps:
            if isinstance(step, Create):
                self._create(step.record)
                replaced += step.replaces
                created += not step.replaces
            else:
                self._delete(step.record)
                deleted += not step.replaced
        report = RegistryReport(created, replaced, deleted, unchanged)
        _log.info("python.org records of %s: %s", plan.tag, report)
        return report

    # -- lookups

    def _target(self, tag: ReleaseTag) -> _ReleaseTarget:
        cached = self._targets.get(str(tag))
        if cached is not None:
            return cached
        name = self.settings.release_name(tag)
        releases = self._get_objects("downloads/release/", {"name": name}, f"release {name!r}")
        if not releases:
            raise RegistryError(
                f"python.org has no release '{name}': create the release '{name}' in the "
                "python.org admin first (an unpublished release is visible to staff users only)."
            )
        release_uri = str(releases[0]["resource_uri"])
        os_uris: dict[str, str] = {}
        for slug in self.settings.os_slugs:
            found = self._get_objects("downloads/os/", {"slug": slug}, f"OS {slug!r}")
            if not found:
                raise RegistryError(
                    f"python.org has no operating system with slug {slug!r}, which the "
                    f"profile's [pydotorg] rules use; add it in the admin or fix the profile."
                )
            os_uris[slug] = str(found[0]["resource_uri"])
        target = _ReleaseTarget(release_uri, _pk(release_uri), os_uris)
        self._targets[str(tag)] = target
        return target

    def _release_files(self, target: _ReleaseTarget) -> Iterator[Record]:
        """Every record of the release, following Tastypie's ``meta.next``."""
        url: httpx.URL | None = self._url("downloads/release_file/").copy_merge_params(
            {"release": target.release_pk, "limit": _PAGE_SIZE}
        )
        for _ in range(_MAX_PAGES):
            if url is None:
                return
            page = self._get_json(url, "the release's files")
            yield from _objects(page)
            meta = page.get("meta")
            following = meta.get("next") if isinstance(meta, dict) else None
            url = self._url(str(following)) if following else None
        raise RegistryError("python.org listed more pages of release files than expected.")

    def _get_objects(self, path: str, params: Mapping[str, str], what: str) -> list[Record]:
        return _objects(self._get_json(self._url(path).copy_merge_params(params), what))

    def _get_json(self, url: httpx.URL, what: str) -> Record:
        response, _ = self._send("GET", url, what=f"look up {what}")
        if response.status_code != 200:
            raise self._refused(response, f"look up {what}")
        try:
            body = response.json()
        except ValueError as err:
            raise RegistryError(
                f"python.org answered the look-up of {what} with something that is not JSON."
            ) from err
        if not isinstance(body, dict):
            raise RegistryError(f"python.org answered the look-up of {what} unexpectedly.")
        return body

    # -- writes

    def _create(self, record: Record) -> None:
        """POST the record. A create that failed without a clear refusal (5xx, a lost
        answer) may have been carried out: python.org is asked what it holds before the POST
        is sent again, never blindly. python.org answers a duplicate url or slug, or a second
        download button, with a 500: an identical record there is the create done."""
        what = f"create the record {record['name']!r} ({record['url']})"
        policy, files = self._http.retry, self._url("downloads/release_file/")
        for attempt in range(1, policy.attempts + 1):
            response: httpx.Response | None = None
            try:
                answer, _ = self._send("POST", files, what=what, body=record)
            except BudgetRefusal:  # not sent
                raise
            except RegistryError as err:  # no answer at all: it may or may not be done
                failure, reason = err, "no answer"
            else:
                response = answer
                if response.status_code == 201:
                    if not response.headers.get("Location"):
                        raise RegistryError(
                            f"python.org did not say where it put the record ({what})."
                        )
                    _log.info(
                        "python.org: created %s at %s", record["url"], response.headers["Location"]
                    )
                    return
                if response.status_code < 500:  # a refusal: nothing was made
                    raise self._refused(response, what)
                failure = self._refused(response, what)
                reason = f"HTTP {response.status_code}"
            if self._already_there(record, what, reason):
                _log.info("python.org: %s is there (an earlier attempt made it)", record["url"])
                return
            if attempt < policy.attempts:
                wait = policy.wait(attempt, response)
                _log.warning("python.org: %s failed; trying again in %.1f s", what, wait or 0.0)
                policy.sleep(wait or 0.0)
        raise failure

    def _already_there(self, record: Record, what: str, reason: str) -> bool:
        """Whether python.org holds ``record`` as wanted (True) or nothing in its way
        (False); raises when another record holds its slug, URL or download button."""
        fields = tuple(self.settings.sidecars.values())
        by_slug = self._get_objects(
            "downloads/release_file/", {"slug": str(record["slug"])}, f"record {record['slug']!r}"
        )
        if any(not differs(obj, record, fields) for obj in by_slug):
            return True
        release = _ReleaseTarget("", _pk(str(record["release"])), {})
        there, in_the_way = _what_is_there(record, by_slug, self._release_files(release), fields)
        if in_the_way:
            raise RegistryError(
                f"python.org could not {what} ({reason}): {in_the_way}; fix it in the "
                "python.org admin, then publish again."
            )
        return there

    def _delete(self, record: Record) -> None:
        what = f"delete the record {record.get('name')!r} ({record.get('url')})"
        response, attempts = self._send("DELETE", self._url(str(record["resource_uri"])), what=what)
        # 404 after a retry: an earlier attempt deleted it.
        if response.status_code == 204 or (response.status_code == 404 and attempts > 1):
            _log.info("python.org: deleted %s (%s)", record.get("url"), record["resource_uri"])
            return
        raise self._refused(response, what)

    # -- HTTP

    def _refused(self, response: httpx.Response, what: str) -> RegistryError:
        message = server_message(response, self._redact)
        if response.status_code == 429:
            return rate_limit_refusal(response, self._user, self._http.retry, what)
        if response.status_code in (401, 403):
            return RegistryError(
                f"python.org refused the credentials of API user {self._user!r} to {what} "
                f"(HTTP {response.status_code}: {message}); check {self._auth_source}: "
                "'user:apikey' of a staff user."
            )
        return RegistryError(
            f"python.org refused to {what} (HTTP {response.status_code}: {message})."
        )

    def _redact(self, text: str) -> str:
        """``text`` without the key, as sent or as a server may echo it."""
        return text.replace(self._secret, "***")


def _what_is_there(
    record: Record, by_slug: list[Record], siblings: Iterator[Record], fields: tuple[str, ...]
) -> tuple[bool, str]:
    """Whether ``record`` is among the records of its slug and of its release, as wanted;
    else what holds its slug, URL or download button ("" for nothing)."""
    siblings_seen = list(siblings)
    same_url = [obj for obj in siblings_seen if obj.get("url") == record["url"]]
    if any(not differs(obj, record, fields) for obj in same_url):
        return True, ""
    for obj in (*by_slug, *same_url):
        names = ", ".join(_differing(obj, record, fields))
        which = "slug" if obj in by_slug else "URL"
        return False, (
            f"its record {obj.get('resource_uri')} has the same {which} but differs in {names}"
        )
    if record.get("download_button"):
        for obj in siblings_seen:
            if obj.get("download_button") and _same_uri(obj.get("os"), record["os"]):
                return False, (
                    f"its record {obj.get('resource_uri')} ({obj.get('url')}) is already the "
                    "download button of this OS and python.org allows one"
                )
    return False, ""


def _pk(resource_uri: str) -> str:
    return PurePosixPath(resource_uri).name  # ".../release/12/" → "12"


def _same_uri(a: object, b: object) -> bool:
    """Two resource URIs of one object (python.org may give a path or an absolute URL)."""
    return PurePosixPath(urlsplit(str(a)).path) == PurePosixPath(urlsplit(str(b)).path)


def _differing(existing: Record, wanted: Record, sidecar_fields: tuple[str, ...]) -> list[str]:
    """The fields in which ``existing`` is not ``wanted``, by :func:`differs`'s rules."""
    return [
        key
        for key in wanted
        if key in existing and differs({key: existing[key]}, {key: wanted[key]}, ())
    ] or ["fields python.org does not list"]


def _objects(page: Mapping[str, Any]) -> list[Record]:
    objects = page.get("objects")
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        raise RegistryError("python.org answered a look-up without the expected 'objects' list.")
    return objects
