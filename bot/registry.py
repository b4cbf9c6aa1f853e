"""The python.org release database ("addfiles"): a client of the downloads API v1 (Tastypie).

:class:`PydotorgRegistry` implements :class:`bot.ports.Registry`. Which published file becomes
which ``ReleaseFile`` record is data: the ``[pydotorg]`` table of the profile (see
``bot/domain/profiles/cpython.toml``), parsed by :class:`PydotorgSettings`. Nothing here knows
CPython; what it knows is the python.org API (fields, filters, Tastypie pagination).

Unlike ``add_to_pydotorg.py``, which deletes every record of the release and re-creates them
(a failure midway leaves the release with no files), :meth:`PydotorgRegistry.sync` works by
difference: records that already match are left alone, so running it again writes nothing.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Self

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile, expand
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RegistryError
from bot.ports import RegistryReport

_log = logging.getLogger(__name__)

_BRANCH_RE = re.compile(r"\d+\.\d+")
# Statuses worth another try: rate limiting and server-side trouble.
_RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
_PAGE_SIZE: Final = 100
_MAX_PAGES: Final = 1000

Record = dict[str, Any]
"""A ReleaseFile as JSON: what is POSTed, or what the API lists."""


# --- settings: the profile's [pydotorg] table ------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileRule(_Strict):
    """One row of the file → record mapping; ``match`` is searched in the file name."""

    match: str
    name: str
    os: str
    download_button: bool = False
    description: str = ""
    description_since: dict[str, str] = Field(default_factory=dict)

    @field_validator("match")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(f"{value!r} is not a Python regular expression ({err})") from err
        return value

    @field_validator("description_since")
    @classmethod
    def _branches(cls, value: dict[str, str]) -> dict[str, str]:
        for branch in value:
            if not _BRANCH_RE.fullmatch(branch):
                raise ValueError(f"{branch!r} is not a branch like 3.14")
        return value

    def description_for(self, tag: ReleaseTag) -> str:
        """The description of ``tag``'s record: the newest ``description_since`` that applies."""
        applicable = [b for b in self.description_since if tag.at_least(b)]
        newest = max(applicable, key=lambda b: tuple(int(p) for p in b.split(".")), default=None)
        text = self.description if newest is None else self.description_since[newest]
        return expand(text, tag)


class PydotorgSettings(_Strict):
    """The profile's ``[pydotorg]`` table: how published files map to release-file records."""

    release: str = "Python {tag}"
    files_url: str
    names: str = ""  # a file name must match this first ({tag} escaped)
    source_os: str = ""
    sidecars: dict[str, str] = Field(default_factory=dict)
    rules: list[FileRule]
    purge: list[str] = Field(default_factory=list)  # read by bot/cdn.py

    @field_validator("files_url")
    @classmethod
    def _slash(cls, value: str) -> str:
        return value if value.endswith("/") else value + "/"

    @classmethod
    def from_profile(cls, profile: Profile) -> PydotorgSettings:
        """Parse ``profile``'s ``[pydotorg]`` table; raises :class:`ConfigError` naming the key."""
        try:
            return cls.model_validate(profile.spec.pydotorg)
        except ValidationError as err:
            first = err.errors()[0]
            key = ".".join(str(part) for part in ("pydotorg", *first["loc"]))
            raise ConfigError(f"profile {profile.name}: {key}: {first['msg']}.") from err

    def release_name(self, tag: ReleaseTag) -> str:
        """The name of ``tag``'s Release object (``Python 3.14.1``)."""
        return expand(self.release, tag)

    @property
    def os_slugs(self) -> tuple[str, ...]:
        """Every OS slug the rules use, in rule order."""
        return tuple(dict.fromkeys(rule.os for rule in self.rules))

    def rule_for(self, tag: ReleaseTag, name: str) -> FileRule | None:
        """The rule registering file ``name`` of ``tag``, or None if it is not registered."""
        if name.endswith(tuple(self.sidecars)):
            return None
        if self.names:
            gate = self.names.replace("{tag}", re.escape(str(tag)))
            if not re.search(gate, name):
                return None
        return next((rule for rule in self.rules if re.search(rule.match, name)), None)


# --- the records a plan should have -----------------------------------------------------------


@dataclass(frozen=True)
class PlannedRecord:
    """The ReleaseFile record one published file should have; ``os`` is the OS slug."""

    target: str
    name: str
    slug: str
    os: str
    description: str
    is_source: bool
    url: str
    sha256_sum: str
    filesize: int
    download_button: bool
    sidecars: tuple[tuple[str, str], ...] = ()  # (field, URL) for the sidecars published

    def to_json(self, release_uri: str, os_uri: str) -> Record:
        """The body to POST to ``downloads/release_file/``."""
        return {
            "name": self.name,
            "slug": self.slug,
            "os": os_uri,
            "release": release_uri,
            "description": self.description,
            "is_source": self.is_source,
            "url": self.url,
            "sha256_sum": self.sha256_sum,
            "filesize": self.filesize,
            "download_button": self.download_button,
            **dict(self.sidecars),
        }


def slug_for(tag: ReleaseTag) -> str:
    """The release part of a record slug, as add_to_pydotorg.py makes it (``3140-rc2``)."""
    compact = tag.version.replace(".", "")
    return f"{compact}-{tag.prerelease_suffix}" if tag.is_prerelease else compact


def make_slug(text: str) -> str:
    """Spaces to ``-``, then only ``[a-zA-Z0-9_-]`` kept (add_to_pydotorg.py's make_slug)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "", text.replace(" ", "-"))


def planned_records(
    settings: PydotorgSettings, profile: Profile, plan: PublishPlan
) -> list[PlannedRecord]:
    """The records ``plan`` should have, in plan order.

    Only files directly in the release's public folder whose name a rule matches are
    registered (docs, MSI sub-folders and sidecars are not). Raises :class:`RegistryError`
    when two files would get the same URL or slug, or one OS two download buttons.
    """
    tag = plan.tag
    folder = profile.public_folder(tag) + "/"
    targets = {f.target for f in plan.files}
    records: list[PlannedRecord] = []
    for file in plan.files:
        name = file.target.removeprefix(folder)
        if not file.target.startswith(folder) or "/" in name:
            continue
        rule = settings.rule_for(tag, name)
        if rule is None:
            continue
        url = settings.files_url + file.target
        records.append(
            PlannedRecord(
                target=file.target,
                name=rule.name,
                slug=slug_for(tag) + "-" + make_slug(rule.name)[:40],
                os=rule.os,
                description=rule.description_for(tag),
                is_source=rule.os == settings.source_os,
                url=url,
                sha256_sum=file.sha256,
                filesize=file.size,
                download_button=rule.download_button,
                sidecars=tuple(
                    (api_field, url + suffix)
                    for suffix, api_field in settings.sidecars.items()
                    if file.target + suffix in targets
                ),
            )
        )
    _check_consistent(records)
    return records


def _check_consistent(records: Sequence[PlannedRecord]) -> None:
    for what in ("slug", "url"):
        seen: dict[str, str] = {}
        for record in records:
            if (value := str(getattr(record, what))) in seen:
                raise RegistryError(
                    f"{seen[value]} and {record.target} would get the same python.org {what} "
                    f"{value!r}; fix the profile's [pydotorg] rules."
                )
            seen[value] = record.target
    buttons: dict[str, str] = {}
    for record in records:
        if record.download_button:
            if record.os in buttons:
                raise RegistryError(
                    f"{buttons[record.os]} and {record.target} would both be the download "
                    f"button of OS {record.os!r}; python.org allows one per OS."
                )
            buttons[record.os] = record.target


# --- HTTP with retries ------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry 429, 5xx and connection errors.

    The n-th wait is ``backoff * 2 ** (n - 1)`` seconds, or the server's ``Retry-After``;
    either is capped at ``max_wait``. ``sleep`` is injectable so tests need not wait.
    """

    attempts: int = 4
    backoff: float = 1.0
    max_wait: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def wait(self, attempt: int, response: httpx.Response | None) -> float:
        """Seconds to wait after failed ``attempt`` (1-based)."""
        hinted = _retry_after(response) if response is not None else None
        wanted = hinted if hinted is not None else self.backoff * 2 ** (attempt - 1)
        return max(0.0, min(wanted, self.max_wait))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def send_with_retries(
    client: httpx.Client, request: httpx.Request, policy: RetryPolicy
) -> tuple[httpx.Response, int]:
    """Send ``request``, retrying 429, 5xx and transport errors; returns (response, attempts).

    The last response is returned whatever its status; raises the last
    :class:`httpx.TransportError` when every attempt failed to get one.
    """
    for attempt in range(1, policy.attempts + 1):
        response: httpx.Response | None
        try:
            response = client.send(request)
        except httpx.TransportError as err:
            if attempt == policy.attempts:
                raise
            reason = type(err).__name__
            response = None
        else:
            if response.status_code not in _RETRY_STATUSES or attempt == policy.attempts:
                return response, attempt
            response.close()
            reason = f"HTTP {response.status_code}"
        wait = policy.wait(attempt, response)
        _log.warning(
            "%s %s failed (%s); retrying in %.1f s", request.method, request.url, reason, wait
        )
        policy.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


# --- the client -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ReleaseTarget:
    """What a lookup found: the Release's resource URI and pk, and each OS's resource URI."""

    release_uri: str
    release_pk: str
    os_uris: Mapping[str, str]


@dataclass(frozen=True)
class _Create:
    record: Record
    replaces: bool


@dataclass(frozen=True)
class _Delete:
    record: Record
    replaced: bool


class HttpClientOwner:
    """Something that owns an ``httpx.Client``: closed by ``close()`` or a ``with`` block."""

    _client: httpx.Client

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class PydotorgRegistry(HttpClientOwner):
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
        self._retry = retry or RetryPolicy()
        self._client = httpx.Client(
            headers={
                "Authorization": f"ApiKey {self._user}:{self._secret}",
                "Accept": "application/json",
            },
            transport=transport,
            timeout=timeout,
            follow_redirects=False,  # a redirect could carry the key elsewhere
        )
        self._targets: dict[str, _ReleaseTarget] = {}

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
        """Make the release's records match ``plan``, by difference.

        Order: records that collide with nothing are created first; a record that must be
        replaced (v1 has no PUT/PATCH, and ``url`` and ``slug`` are unique, so the new one
        cannot exist beside the old) is deleted right before its replacement is created,
        together with any stale record holding its slug or its OS's download button; the
        remaining stale records go last. So the release loses at most the records one
        replacement collides with, for one request, and never drops to zero files unless
        every record it has must be replaced at once. Raises :class:`RegistryError`; a run
        that stopped midway is finished by running it again.
        """
        target = self._target(plan.tag)
        wanted: dict[str, Record] = {}
        for planned in planned_records(self.settings, self._profile, plan):
            os_uri = target.os_uris.get(planned.os)
            if os_uri is None:
                raise RegistryError(f"python.org has no operating system {planned.os!r}.")
            wanted[planned.url] = planned.to_json(target.release_uri, os_uri)
        existing = list(self._release_files(target))
        steps, unchanged = _schedule(existing, wanted, tuple(self.settings.sidecars.values()))
        created = replaced = deleted = 0
        for step in steps:
            if isinstance(step, _Create):
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
        what = f"create the record {record['name']!r} ({record['url']})"
        response, attempts = self._send(
            "POST", self._url("downloads/release_file/"), what=what, body=record
        )
        if response.status_code == 201:
            if not response.headers.get("Location"):
                raise RegistryError(f"python.org did not say where it put the record ({what}).")
            _log.info("python.org: created %s at %s", record["url"], response.headers["Location"])
            return
        # An earlier attempt may have succeeded with its answer lost: then the retry is
        # refused as a duplicate although the record is there, exactly as wanted.
        if attempts > 1 and response.status_code == 400 and self._already_there(record):
            _log.info("python.org: %s was created by an earlier attempt", record["url"])
            return
        raise self._refused(response, what)

    def _already_there(self, record: Record) -> bool:
        found = self._get_objects(
            "downloads/release_file/", {"slug": str(record["slug"])}, f"record {record['slug']!r}"
        )
        fields = tuple(self.settings.sidecars.values())
        return any(not _differs(obj, record, fields) for obj in found)

    def _delete(self, record: Record) -> None:
        what = f"delete the record {record.get('name')!r} ({record.get('url')})"
        response, attempts = self._send("DELETE", self._url(str(record["resource_uri"])), what=what)
        # 404 after a retry: an earlier attempt deleted it.
        if response.status_code == 204 or (response.status_code == 404 and attempts > 1):
            _log.info("python.org: deleted %s (%s)", record.get("url"), record["resource_uri"])
            return
        raise self._refused(response, what)

    # -- HTTP

    def _url(self, reference: str) -> httpx.URL:
        """``reference`` (relative to the API, or an absolute path from the API) as a URL on
        the API's own origin: the key is never sent anywhere else."""
        url = self._api_url.join(reference)
        if (url.scheme, url.host, url.port) != (
            self._api_url.scheme,
            self._api_url.host,
            self._api_url.port,
        ):
            raise RegistryError(f"python.org pointed to another site ({url.host}); refusing.")
        return url

    def _send(
        self, method: str, url: httpx.URL, *, what: str, body: Record | None = None
    ) -> tuple[httpx.Response, int]:
        request = self._client.build_request(
            method,
            url,
            content=None if body is None else json.dumps(body).encode(),
            headers={} if body is None else {"Content-Type": "application/json"},
        )
        try:
            response, attempts = send_with_retries(self._client, request, self._retry)
        except httpx.TransportError as err:
            raise RegistryError(
                f"python.org could not be reached to {what} ({type(err).__name__} after "
                f"{self._retry.attempts} attempts); try again later."
            ) from err
        _log.debug("%s %s → %s", method, url, response.status_code)
        return response, attempts

    def _refused(self, response: httpx.Response, what: str) -> RegistryError:
        message = self._redact(_server_message(response))
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
        return text.replace(self._secret, "***")


def _schedule(
    existing: Sequence[Record], wanted: Mapping[str, Record], sidecar_fields: Sequence[str]
) -> tuple[list[_Create | _Delete], int]:
    """The writes turning ``existing`` into ``wanted`` (keyed by URL), in a safe order, and
    how many records stay unchanged. See :meth:`PydotorgRegistry.sync` for the order."""
    by_url = {str(record.get("url")): record for record in existing}
    keep = {
        url
        for url, record in wanted.items()
        if url in by_url and not _differs(by_url[url], record, sidecar_fields)
    }
    doomed = [record for record in existing if str(record.get("url")) not in keep]
    creates = [record for url, record in wanted.items() if url not in keep]

    def blockers(new: Record) -> list[Record]:
        return [old for old in doomed if _collides(old, new)]

    steps: list[_Create | _Delete] = []
    blocked = []
    for new in creates:
        if blockers(new):
            blocked.append(new)
        else:
            steps.append(_Create(new, replaces=False))
    for new in blocked:
        for old in blockers(new):
            doomed.remove(old)
            steps.append(_Delete(old, replaced=old.get("url") == new["url"]))
        steps.append(_Create(new, replaces=str(new["url"]) in by_url))
    steps.extend(_Delete(old, replaced=False) for old in doomed)
    return steps, len(keep)


def _collides(old: Record, new: Record) -> bool:
    """Whether ``new`` cannot be created while ``old`` exists (python.org's unique fields)."""
    return (
        old.get("url") == new["url"]
        or old.get("slug") == new["slug"]
        or bool(
            new["download_button"]
            and old.get("download_button")
            and _uri_path(old.get("os")) == _uri_path(new["os"])
        )
    )


def _differs(existing: Record, wanted: Record, sidecar_fields: Sequence[str]) -> bool:
    """Whether ``existing`` must be replaced to become ``wanted``.

    Fields the server does not list cannot be compared and are taken as equal; a sidecar
    field missing from ``wanted`` must be blank on the server.
    """
    for key in dict.fromkeys((*wanted, *sidecar_fields)):
        if key not in existing:
            continue
        have, want = existing[key], wanted.get(key, "")
        if key in ("os", "release"):
            have, want = _uri_path(have), _uri_path(want)
        elif key == "filesize":
            have, want = str(have), str(want)
        if (have or "") != (want or ""):
            return True
    return False


def _uri_path(value: object) -> str:
    return httpx.URL(str(value)).path if value else ""


def _pk(resource_uri: str) -> str:
    return resource_uri.rstrip("/").rsplit("/", 1)[-1]


def _objects(page: Mapping[str, Any]) -> list[Record]:
    objects = page.get("objects")
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        raise RegistryError("python.org answered a look-up without the expected 'objects' list.")
    return objects


def _server_message(response: httpx.Response) -> str:
    """The reason the server gave, in one line (Tastypie's ``error_message``, field errors)."""
    try:
        body = response.json()
    except ValueError:
        text = " ".join(response.text.split())
        return text[:300] or response.reason_phrase or "no reason given"
    if isinstance(body, dict):
        for key in ("error_message", "error", "detail"):
            if isinstance(body.get(key), str):
                return str(body[key])[:300]
    return json.dumps(body)[:300]
