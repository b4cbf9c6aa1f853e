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

import json
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
    PlannedRecord,
    PydotorgSettings,
    Record,
    differs,
    planned_records,
    schedule,
)
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RegistryError
from bot.http_client import HttpClient, RetryPolicy, retry_after
from bot.ports import RegistryReport
from bot.pydotorg.api import PydotorgApi

_log = logging.getLogger(__name__)

_PAGE_SIZE: Final = 100
# What python.org's database holds: an IntegerField file size, 200-character text and URLs.
MAX_FILESIZE: Final = 2**31
MAX_LENGTH: Final = 200
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
    thread. The key never appears in logs, exceptions or ``repr``.
    """

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
        )
        self._targets: dict[str, _ReleaseTarget] = {}
        self._notice = notice  # a sentence for the release channel (a wait for python.org)
        self._told_wait = False

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

    def sync(self, plan: PublishPlan) -> RegistryReport:
        """Make the release's records match ``plan``, by difference, in the order of
        :func:`bot.domain.records.schedule` (create before delete). Raises
        :class:`RegistryError`; a run that stopped midway is finished by running it again.
        """
        target = self._target(plan.tag)
        wanted: dict[str, Record] = {}
        planned_all = planned_records(self.settings, self._profile, plan)
        for planned in planned_all:
            _check_storable(planned)
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
        response, _ = self._send(
            "GET", url, what=f"look up {what}", on_rate_limit=self._rate_limited
        )
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
        policy = self._http.retry
        for attempt in range(1, policy.attempts + 1):
            response: httpx.Response | None = None
            try:
                answer, _ = self._send(
                    "POST",
                    self._url("downloads/release_file/"),
                    what=what,
                    body=record,
                    on_rate_limit=self._rate_limited,
                )
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
        release = _pk(str(record["release"]))
        found = self._get_objects(
            "downloads/release_file/", {"slug": str(record["slug"])}, f"record {record['slug']!r}"
        )
        if any(not differs(obj, record, fields) for obj in found):
            return True
        siblings = list(self._release_files_of(release))
        same_url = [obj for obj in siblings if obj.get("url") == record["url"]]
        if any(not differs(obj, record, fields) for obj in same_url):
            return True
        for obj in (*found, *same_url):
            names = ", ".join(_differing(obj, record, fields))
            which = "slug" if obj in found else "URL"
            raise RegistryError(
                f"python.org could not {what} ({reason}): its record "
                f"{obj.get('resource_uri')} has the same {which} but differs in {names}; "
                "delete or fix that record in the python.org admin, then publish again."
            )
        if record.get("download_button"):
            for obj in siblings:
                if obj.get("download_button") and _same_uri(obj.get("os"), record["os"]):
                    raise RegistryError(
                        f"python.org could not {what} ({reason}): its record "
                        f"{obj.get('resource_uri')} ({obj.get('url')}) is already the download "
                        "button of this OS and python.org allows one; clear it in the "
                        "python.org admin, then publish again."
                    )
        return False

    def _release_files_of(self, release_pk: str) -> Iterator[Record]:
        return self._release_files(_ReleaseTarget("", release_pk, {}))

    def _rate_limited(self, seconds: float) -> None:
        """python.org's rate limit asks to wait ``seconds``: said once per registry."""
        if self._told_wait:
            return
        self._told_wait = True
        _log.warning("python.org rate limits API user %r: waiting %.0f s", self._user, seconds)
        if self._notice is not None:
            self._notice(
                f"python.org is rate limiting API user {self._user!r}: the registration waits "
                f"{_duration(seconds)} as python.org asks, then goes on."
            )

    def _delete(self, record: Record) -> None:
        what = f"delete the record {record.get('name')!r} ({record.get('url')})"
        response, attempts = self._send(
            "DELETE",
            self._url(str(record["resource_uri"])),
            what=what,
            on_rate_limit=self._rate_limited,
        )
        # 404 after a retry: an earlier attempt deleted it.
        if response.status_code == 204 or (response.status_code == 404 and attempts > 1):
            _log.info("python.org: deleted %s (%s)", record.get("url"), record["resource_uri"])
            return
        raise self._refused(response, what)

    # -- HTTP

    def _refused(self, response: httpx.Response, what: str) -> RegistryError:
        message = _server_message(response, self._redact)
        if response.status_code == 429:
            asked, bound = retry_after(response), self._http.retry.max_wait
            why = (
                f"asks to wait {_duration(asked)}, more than [pydotorg] max_wait allows "
                f"({_duration(bound)})"
                if asked is not None and asked > bound
                else f"still refused after {self._http.retry.attempts} attempts"
            )
            return RegistryError(
                f"python.org could not {what}: its rate limit for API user {self._user!r} "
                f"{why}; publish again later, what is registered stays."
            )
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


def _check_storable(record: PlannedRecord) -> None:
    """Refuse, before any write, a record python.org's database cannot hold: it answers
    those with a 500 that looks like a passing failure."""
    if not 0 <= record.filesize < MAX_FILESIZE:
        raise RegistryError(
            f"{record.target} is {record.filesize} bytes; python.org stores a file size below "
            f"2**31 ({MAX_FILESIZE} bytes) only, so it cannot be registered; nothing was written."
        )
    for field, value in (
        ("name", record.name),
        ("slug", record.slug),
        ("url", record.url),
        *record.sidecars,
    ):
        if len(value) > MAX_LENGTH:
            raise RegistryError(
                f"The python.org {field} of {record.target} would be {len(value)} characters "
                f"long; python.org stores {MAX_LENGTH} at most, so nothing was written "
                "(shorten the file name or the profile's [pydotorg] rule)."
            )


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


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def _objects(page: Mapping[str, Any]) -> list[Record]:
    objects = page.get("objects")
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        raise RegistryError("python.org answered a look-up without the expected 'objects' list.")
    return objects


def _server_message(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """The reason the server gave, in one line (Tastypie's ``error_message``, field errors),
    ``redact``-ed before it is cut: a cut through an echoed key would leave part of it."""
    try:
        body = response.json()
    except ValueError:
        text = redact(" ".join(response.text.split()))
        return text[:300] or response.reason_phrase or "no reason given"
    if isinstance(body, dict):
        for key in ("error_message", "error", "detail"):
            if isinstance(body.get(key), str):
                return redact(str(body[key]))[:300]
        # tastypie's validation errors: {"downloads/release_file": {"url": ["..."]}}
        if len(body) == 1 and isinstance(errors := next(iter(body.values())), dict):
            said = [
                f"{field}: {' '.join(str(m) for m in messages)}"
                for field, messages in errors.items()
                if isinstance(messages, list)
            ]
            if said and len(said) == len(errors):
                return redact("; ".join(said))[:300]
    return redact(json.dumps(body))[:300]
