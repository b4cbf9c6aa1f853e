"""A test double of python.org's downloads API v1 (Tastypie), as a real HTTP server on loopback.

    with PydotorgDouble(users={"rm": ("key", True)}) as api:
        api.add_release("Python 3.14.1")
        ...  # point a client at api.url ("http://127.0.0.1:PORT/api/v1/")
        api.files("Python 3.14.1"); api.requests; api.purges

It answers as python.org's own app does (pythondotorg 0a7e8d1f on PostgreSQL; the probes of
tests/registry/test_pydotorg_probes.py send the same requests to both and compare the status
and the error's shape): the ``Authorization: ApiKey user:key`` header, a staff user for writes
(an empty 401 otherwise, also for a key in the query string or a malformed header), unique
``url`` and ``slug`` and one download button per (release, OS) refused with a **500** (tastypie
does not catch PostgreSQL's IntegrityError), a ``filesize`` of 2**31 or more and a name, slug
or URL over 200 characters refused with a 500 too, ``ReleaseFile.clean()``'s refusals (URLs under
``https://www.python.org/``, each sidecar URL equal to the file URL + its suffix) as
``{"downloads/release_file": {field: [message]}}``, other bad requests as ``{"error": ...}``,
no Content-Type a 415, a list DELETE needing exactly one ``release`` filter, 201 + a relative
``Location`` on create, PATCH/PUT a 405 whose body lists the allowed methods, an unpublished
release listed to staff only (its detail a 401 to anyone else), the Tastypie list shape with
``limit``/``offset``/``next``, and tastypie's throttle: 600 requests an hour per user, then 429
with the seconds until the oldest leaves the hour as ``Retry-After``
(:attr:`PydotorgDouble.accesses`, :attr:`PydotorgDouble.throttle_at`).

It also serves the Release part of API v2 (Django REST framework, ``/api/v2/downloads/release/``),
the one that can change a Release: ``Authorization: Token KEY`` (an unknown token is a 401 even
for reads, as DRF's TokenAuthentication answers), reads for anyone (unpublished releases for
staff only), writes for staff only (401 without a token, 403 for a non-staff one), PATCH for a
partial change, PUT and POST needing ``name`` and ``slug``, unknown filters ignored as
django-filter does, the whole list unpaginated, and on every save with ``is_latest`` set,
``is_latest`` cleared on every other release of the same ``version`` (python.org's
``promote_latest_release``). :attr:`PydotorgDouble.after_write` runs after each v2 write
(another admin at work).

Deliberately stricter than python.org, each to catch a client mistake that python.org would
store silently (the probes check that python.org takes these and the double refuses them):

- v1 create with a field python.org does not know: 400 (python.org ignores it: a misspelt
  sidecar field would register a file without its signature);
- v1 create with a value of the wrong type (``"filesize": "1234"``): 400 (python.org converts
  it: relbot must send what it means);
- v1 create with a slug outside ``[-a-zA-Z0-9_]``, or without ``url`` or ``name``: 400
  (python.org stores them as given, or as ``""``: a record no page can link to);
- v1 list with a filter python.org does not know (``?foo=bar``): 400 (python.org ignores it and
  lists every release's files: a sync trusting that list would delete other releases' files);
- v1 create of a Release: 405 (python.org allows it; the RM makes releases in the admin and
  relbot must never);
- v2 PATCH of an unknown field, of a boolean as a string, or as a form: 400/415 (python.org
  ignores the field or converts the value: a typo would leave the page unpublished while the
  answer says 200);
- v2 release files (``/api/v2/downloads/release_file/``): not served, 404 (relbot reads files
  through v1 only).

Any ``PURGE`` request is answered 200 and recorded in :attr:`PydotorgDouble.purges`, standing in
for the CDN in front of python.org. Faults are injected with :meth:`PydotorgDouble.fail` (a
redirect too: a 3xx status with a ``location``). Setting :attr:`PydotorgDouble.link_origin`
makes the links it hands out (``meta.next``/``previous``, a create's ``Location``) point to
another origin, as a misconfigured or hostile server might.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.doubles.server import LoopbackServer

API = "/api/v1/"
API2 = "/api/v2/"
# What API v2's ReleaseSerializer shows, and which of those a write may set.
RELEASE_FIELDS_V2 = (
    "name",
    "slug",
    "version",
    "is_published",
    "is_latest",
    "release_date",
    "pre_release",
    "release_page",
    "release_notes_url",
    "show_on_download_page",
    "resource_uri",
)
RELEASE_BOOLEANS = ("is_published", "is_latest", "pre_release", "show_on_download_page")
RELEASE_FILTERS_V2 = ("name", "slug", "is_published", "pre_release", "version", "release_date")
_TOKEN_RE = re.compile(r"Token (\S+)")
PYTHON_ORG = "https://www.python.org/"
DEFAULT_OSES = (
    ("Source release", "source"),
    ("Windows", "windows"),
    ("macOS", "macos"),
    ("Android", "android"),
    ("iOS", "ios"),
)
SIDECAR_FIELDS = {
    "gpg_signature_file": ".asc",
    "sigstore_signature_file": ".sig",
    "sigstore_cert_file": ".crt",
    "sigstore_bundle_file": ".sigstore",
    "sbom_spdx2_file": ".spdx.json",
}
FILE_FIELDS = {
    "name": str,
    "slug": str,
    "os": str,
    "release": str,
    "description": str,
    "is_source": bool,
    "url": str,
    "md5_sum": str,
    "sha256_sum": str,
    "filesize": int,
    "download_button": bool,
    **dict.fromkeys(SIDECAR_FIELDS, str),
}
REQUIRED_FILE_FIELDS = ("name", "slug", "os", "release", "url")
MAX_LENGTH = 200  # name, slug, url: PostgreSQL varchar(200)
MAX_FILESIZE = 2**31  # filesize: a 32-bit integer column
SERVER_ERROR = "Sorry, this request could not be processed. Please try again later."
URL_PREFIX_MESSAGE = "Release file URLs must begin with 'https://www.python.org/'."
SIDECAR_MESSAGE = "Sidecar URL must match the artifact URL plus '{}'."
THROTTLE_AT = 600  # API v1 requests per user and hour (tastypie's CacheThrottle)
THROTTLE_WINDOW = 3600
_AUTH_RE = re.compile(r"ApiKey ([^:\s]+):([^:\s]+)")
_SLUG_RE = re.compile(r"[-a-zA-Z0-9_]+")

Op = Literal["create", "delete", "list", "get", "patch", "purge", "any"]


@dataclass
class Fault:
    """Answer the ``nth`` (1-based, counted from when the fault was injected) request of kind
    ``op`` and the ``times - 1`` after it with ``status``; with ``commit``, the request is
    carried out first (an answer lost in transit)."""

    op: Op
    nth: int = 1
    status: int = 500
    times: int = 1
    retry_after: str | None = None
    commit: bool = False
    location: str | None = None  # sent as the Location header (a redirect)
    seen: int = 0
    start: int = 0  # requests of kind ``op`` before the fault was injected


@dataclass(frozen=True)
class RecordedRequest:
    """One request the double received, with the number of files of each release afterwards."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    user: str | None
    status: int
    body: Any = None
    counts_after: Mapping[str, int] = field(default_factory=dict)

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")


class _Refusal(Exception):
    def __init__(
        self,
        status: int,
        message: str = "",
        payload: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.payload = payload  # the body (field errors) instead of the message's
        self.headers = dict(headers or {})


class PydotorgDouble:
    """The double; a context manager that serves on 127.0.0.1 on a free port."""

    def __init__(
        self,
        users: Mapping[str, tuple[str, bool]] | None = None,
        *,
        tokens: Mapping[str, tuple[str, bool]] | None = None,
        oses: tuple[tuple[str, str], ...] = DEFAULT_OSES,
    ) -> None:
        self.users = dict(users or {"rm": ("key", True)})  # name → (API key, is staff)
        # API v2 (DRF) tokens are another key than v1's: name → (token, is staff)
        self.tokens = dict(tokens or {"rm": ("token", True)})
        self.after_write: Callable[[], None] | None = None
        self._lock = threading.RLock()
        self._next_pk = 1
        self.oses: dict[int, dict[str, Any]] = {}
        self.releases: dict[int, dict[str, Any]] = {}
        self.release_files: dict[int, dict[str, Any]] = {}
        self.requests: list[RecordedRequest] = []
        self.purges: list[str] = []
        self.faults: list[Fault] = []
        self._counters: dict[str, int] = {}
        # API v1's throttle: user name ("" for guests) → times of their requests (time.time())
        self.accesses: dict[str, list[int]] = {}
        self.throttle_at = THROTTLE_AT
        for name, slug in oses:
            pk = self._pk()
            self.oses[pk] = {"name": name, "slug": slug, "resource_uri": f"{API}downloads/os/{pk}/"}
        self._server: LoopbackServer | None = None
        self.link_origin = ""  # e.g. "http://127.0.0.2:8000": links point there instead

    # -- lifecycle

    def __enter__(self) -> PydotorgDouble:
        double = self

        class Handler(_Handler):
            owner = double

        self._server = LoopbackServer(Handler)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/``: stands in for ``https://www.python.org/``."""
        assert self._server is not None, "use the double as a context manager"
        return self._server.url

    @property
    def url(self) -> str:
        """The API root, as ``https://www.python.org/api/v1/`` would be configured."""
        return self.base_url + API.lstrip("/")

    # -- setting up and inspecting

    def add_release(
        self, name: str, *, published: bool = False, latest: bool = False, version: int = 3
    ) -> int:
        """Create a Release as the RM does in the admin; returns its pk. ``latest`` saves it
        with is_latest, which (as on python.org) clears it on the others of its version."""
        with self._lock:
            pk = self._pk()
            number = name.removeprefix("Python ")
            self.releases[pk] = {
                "name": name,
                "slug": re.sub(r"[^a-z0-9]+", "-", name.lower()),
                "version": version,
                "is_published": published,
                "is_latest": latest,
                "pre_release": bool(re.search(r"(a|b|rc)\d+$", number)),
                "release_date": None,
                "release_page": None,
                "release_notes_url": "",
                "show_on_download_page": True,
                "resource_uri": f"{API}downloads/release/{pk}/",
            }
            self._saved(pk)
            return pk

    def release(self, name: str) -> dict[str, Any]:
        """The Release named ``name``, as stored."""
        with self._lock:
            return dict(self.releases[_pk_of(self._release_uri(name), "release")])

    def latest(self, version: int = 3) -> list[str]:
        """The names of the releases of ``version`` flagged is_latest (python.org keeps one)."""
        with self._lock:
            return sorted(
                str(r["name"])
                for r in self.releases.values()
                if r["is_latest"] and r["version"] == version
            )

    def set_latest(self, name: str, latest: bool = True) -> None:
        """Save a release's is_latest as an admin would (with python.org's side effect)."""
        with self._lock:
            pk = _pk_of(self._release_uri(name), "release")
            self.releases[pk]["is_latest"] = latest
            self._saved(pk)

    def add_file(self, **record: Any) -> int:
        """Insert a record directly (as an earlier run or the admin would have); no checks."""
        with self._lock:
            pk = self._pk()
            self.release_files[pk] = self._file_repr(pk, record)
            return pk

    def files(self, release: str | int) -> list[dict[str, Any]]:
        """The records of a release (by name or pk), oldest first."""
        with self._lock:
            uri = self._release_uri(release)
            return [dict(f) for f in self.release_files.values() if f["release"] == uri]

    def os_slug(self, resource_uri: str) -> str:
        """The slug of the OS a record points to."""
        return str(self.oses[_pk_of(resource_uri, "os")]["slug"])

    @property
    def writes(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_write]

    def counts_after_writes(self, release: str) -> list[int]:
        """The release's number of files after each write request, in order."""
        return [r.counts_after.get(release, 0) for r in self.writes]

    def fail(
        self,
        op: Op,
        *,
        nth: int = 1,
        status: int = 500,
        times: int = 1,
        retry_after: str | int | None = None,
        commit: bool = False,
        location: str | None = None,
    ) -> Fault:
        """Inject a fault: e.g. ``fail("create", nth=5, status=500, times=10)``, or a
        redirect: ``fail("list", status=302, location="http://elsewhere/")``."""
        with self._lock:
            fault = Fault(
                op,
                nth,
                status,
                times,
                None if retry_after is None else str(retry_after),
                commit,
                location,
                start=self._counters.get(op, 0),
            )
            self.faults.append(fault)
        return fault

    # -- internals

    def _saved(self, pk: int) -> None:
        """python.org's post_save signal: a release saved as latest demotes the others of
        its version (Python 3: one latest release overall)."""
        saved = self.releases[pk]
        if saved["is_latest"]:
            for other_pk, other in self.releases.items():
                if other_pk != pk and other["version"] == saved["version"]:
                    other["is_latest"] = False

    def _release_v2(self, pk: int, host: str | None = None) -> dict[str, Any]:
        """A Release as API v2's serializer shows it: hyperlinks absolute, on the host the
        request named (DRF builds them from the ``Host`` header)."""
        origin = self.link_origin or (f"http://{host}" if host else self.base_url.rstrip("/"))
        shown = {key: self.releases[pk].get(key) for key in RELEASE_FIELDS_V2}
        shown["resource_uri"] = f"{origin}{API2}downloads/release/{pk}/"
        return shown

    def _pk(self) -> int:
        pk = self._next_pk
        self._next_pk += 1
        return pk

    def _release_uri(self, release: str | int) -> str:
        if isinstance(release, int):
            return f"{API}downloads/release/{release}/"
        for rel in self.releases.values():
            if rel["name"] == release:
                return str(rel["resource_uri"])
        raise KeyError(release)

    def _counts(self) -> dict[str, int]:
        counts = {str(rel["name"]): 0 for rel in self.releases.values()}
        names = {rel["resource_uri"]: rel["name"] for rel in self.releases.values()}
        for record in self.release_files.values():
            name = names.get(record["release"])
            if name is not None:
                counts[name] += 1
        return counts

    def _file_repr(self, pk: int, record: Mapping[str, Any]) -> dict[str, Any]:
        full: dict[str, Any] = {
            "name": "",
            "slug": "",
            "description": "",
            "is_source": False,
            "url": "",
            "md5_sum": "",
            "sha256_sum": "",
            "filesize": 0,
            "download_button": False,
            **dict.fromkeys(SIDECAR_FIELDS, ""),
            "creator": None,
            "last_modified_by": None,
        }
        full.update(record)
        full["resource_uri"] = f"{API}downloads/release_file/{pk}/"
        return full

    def _fault_for(self, op: Op) -> Fault | None:
        for name in (op, "any"):
            self._counters[name] = self._counters.get(name, 0) + 1
        for fault in self.faults:
            if fault.op not in (op, "any"):
                continue
            index = self._counters[fault.op] - fault.start
            if fault.nth <= index < fault.nth + fault.times:
                fault.seen += 1
                return fault
        return None


def _v1(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """An object as API v1 shows it: its Release has no is_latest."""
    return {k: v for k, v in obj.items() if k != "is_latest"} if kind == "release" else obj


def _not_allowed(allowed: str) -> _Refusal:
    """tastypie's 405: the allowed methods, as the body and the ``Allow`` header."""
    return _Refusal(405, payload=allowed.encode(), headers={"Allow": allowed})


def _invalid(field: str, message: str) -> dict[str, Any]:
    """A ``ReleaseFile.clean()`` refusal as tastypie shows it."""
    return {"downloads/release_file": {field: [message]}}


def _pk_of(uri: str, kind: str) -> int:
    match = re.fullmatch(rf"(?:https?://[^/]+)?{API}downloads/{kind}/(\d+)/", uri)
    if match is None:  # tastypie resolves it as a URL first: not one of the API's
        raise _Refusal(404, SERVER_ERROR)
    return int(match.group(1))


class _Handler(BaseHTTPRequestHandler):
    owner: PydotorgDouble
    protocol_version = "HTTP/1.1"
    # One write per response, sent at once: no 40 ms delayed-ACK stall per request.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_PURGE(self) -> None:
        self._handle()

    # -- dispatch

    def _handle(self) -> None:
        api = self.owner
        parts = urlsplit(self.path)
        if parts.path.startswith(API2):
            _handle_v2(self, parts.path, parse_qs(parts.query, keep_blank_values=True))
            return
        query = parse_qs(parts.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        status, payload = 500, None
        headers: dict[str, str] = {}
        user: str | None = None
        with api._lock:
            op = self._op(parts.path, query)
            fault = api._fault_for(op)
            try:
                if fault is not None and not fault.commit:
                    raise _Refusal(fault.status, "injected fault")
                user = self._authenticate(query)
                self._throttle(user)
                if self.command in ("POST", "PUT", "PATCH", "DELETE"):
                    self._require_staff(user)
                if self.command == "POST":
                    body = self._json(raw)
                status, payload, headers = self._route(parts.path, query, user, body)
                if fault is not None:
                    raise _Refusal(fault.status, "injected fault after the change was made")
            except _Refusal as refusal:
                status, headers = refusal.status, dict(refusal.headers)
                payload = refusal.payload
                if payload is None and refusal.message:
                    payload = {"error_message": refusal.message}
                if fault is not None and fault.retry_after is not None:
                    headers["Retry-After"] = fault.retry_after
                if fault is not None and fault.location is not None:
                    headers["Location"] = fault.location
            api.requests.append(
                RecordedRequest(self.command, parts.path, query, user, status, body, api._counts())
            )
        raw_answer = isinstance(payload, bytes)
        data: bytes = (
            payload
            if isinstance(payload, bytes)
            else b""
            if payload is None
            else json.dumps(payload).encode()
        )
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if data:
            kind = "text/html; charset=utf-8" if raw_answer else "application/json"
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _op(self, path: str, query: Mapping[str, list[str]]) -> Op:
        if self.command == "PURGE":
            return "purge"
        if self.command in ("PATCH", "PUT"):
            return "patch"
        if self.command == "POST":
            return "create"
        if self.command == "DELETE":
            return "delete"
        return "get" if re.search(r"/\d+/$", path) else "list"

    def _authenticate(self, query: Mapping[str, list[str]]) -> str | None:
        if "api_key" in query or "username" in query:
            raise _Refusal(401)  # python.org reads keys from the header only
        header = self.headers.get("Authorization")
        if header is None:
            return None  # a guest: may read
        match = _AUTH_RE.fullmatch(header)
        if match is None:
            raise _Refusal(401)
        name, key = match.groups()
        known = self.owner.users.get(name)
        if known is None or known[0] != key:
            raise _Refusal(401)
        return name

    def _throttle(self, user: str | None) -> None:
        """tastypie's CacheThrottle as python.org sets it: 600 requests an hour per user,
        then 429 with the seconds until the oldest of them leaves the hour."""
        if self.command == "PURGE":
            return
        now = int(time.time())
        accesses = self.owner.accesses.setdefault(user or "", [])
        accesses[:] = [t for t in accesses if t >= now - THROTTLE_WINDOW]
        if len(accesses) >= self.owner.throttle_at:
            wait = THROTTLE_WINDOW - (now - accesses[-self.owner.throttle_at])
            if wait:  # tastypie lets a 0 through (it tests the wait for truth)
                raise _Refusal(429, headers={"Retry-After": str(wait)})
        accesses.append(now)

    def _require_staff(self, user: str | None) -> None:
        if self.command == "PURGE":
            return
        if user is None or not self.owner.users[user][1]:
            raise _Refusal(401)

    def _json(self, raw: bytes) -> Any:
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            raise _Refusal(415, SERVER_ERROR)
        try:
            return json.loads(raw)
        except ValueError as err:
            raise _Refusal(400, payload={"error": "Request is not valid JSON."}) from err

    def _route(
        self, path: str, query: Mapping[str, list[str]], user: str | None, body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        api = self.owner
        if self.command == "PURGE":
            api.purges.append(path)
            return 200, {"status": "ok", "id": f"purge-{len(api.purges)}"}, {}
        match = re.fullmatch(rf"{API}downloads/(os|release|release_file)/(?:(\d+)/)?", path)
        if match is None:
            raise _Refusal(404)
        kind, pk_text = match.group(1), match.group(2)
        table = {"os": api.oses, "release": api.releases, "release_file": api.release_files}[kind]
        staff = user is not None and api.users[user][1]
        if self.command in ("PUT", "PATCH"):
            raise _not_allowed("GET,DELETE" if pk_text is not None else "GET,POST,DELETE")
        if pk_text is not None:
            pk = int(pk_text)
            obj = table.get(pk)
            if obj is None:
                raise _Refusal(404)
            if kind == "release" and not (staff or obj["is_published"]):
                raise _Refusal(401)  # python.org: an unpublished release is for staff only
            if self.command == "GET":
                return 200, _v1(kind, obj), {}
            if self.command == "DELETE" and kind == "release_file":
                del table[pk]
                return 204, None, {}
            raise _not_allowed("GET,DELETE")
        if self.command == "GET":
            return 200, self._list(kind, table, query, staff), {}
        if kind != "release_file":
            raise _Refusal(405)
        if self.command == "DELETE":
            return self._delete_list(query)
        if self.command == "POST":
            return self._create(body)
        raise _Refusal(405)

    def _filtered(
        self, kind: str, table: Mapping[int, dict[str, Any]], query: Mapping[str, list[str]]
    ) -> list[dict[str, Any]]:
        allowed = {"name", "slug"} | ({"os", "release"} if kind == "release_file" else set())
        objects = list(table.values())
        for key, values in query.items():
            if key in ("limit", "offset", "format"):
                continue
            if key not in allowed:
                raise _Refusal(
                    400, payload={"error": f"The '{key}' field does not allow filtering."}
                )
            value = values[-1]
            if key in ("os", "release"):
                uri = f"{API}downloads/{key}/{value}/"
                objects = [o for o in objects if o[key] == uri]
            else:
                objects = [o for o in objects if o[key] == value]
        return objects

    def _list(
        self,
        kind: str,
        table: Mapping[int, dict[str, Any]],
        query: Mapping[str, list[str]],
        staff: bool,
    ) -> dict[str, Any]:
        objects = self._filtered(kind, table, query)
        if kind == "release" and not staff:
            objects = [o for o in objects if o["is_published"]]
        try:
            limit = int(query.get("limit", ["20"])[-1])
            offset = int(query.get("offset", ["0"])[-1])
        except ValueError as err:
            bad = query.get("limit", query.get("offset", [""]))[-1]
            message = f"Invalid limit '{bad}' provided. Please provide a positive integer."
            raise _Refusal(400, payload={"error": message}) from err
        limit = 1000 if limit == 0 else min(limit, 1000)
        page = objects[offset : offset + limit]

        def link(at: int) -> str:
            params = {k: v[-1] for k, v in query.items() if k not in ("limit", "offset")}
            encoded = urlencode({**params, "limit": limit, "offset": at})
            return f"{self.owner.link_origin}{API}downloads/{kind}/?{encoded}"

        return {
            "meta": {
                "limit": limit,
                "offset": offset,
                "total_count": len(objects),
                "next": link(offset + limit) if offset + limit < len(objects) else None,
                "previous": link(max(0, offset - limit)) if offset > 0 else None,
            },
            "objects": [_v1(kind, obj) for obj in page],
        }

    def _delete_list(self, query: Mapping[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        if set(query) != {"release"} or len(query["release"]) != 1:
            message = "Deleting release files requires exactly one 'release' filter."
            raise _Refusal(400, payload={"error": message})
        api = self.owner
        uri = f"{API}downloads/release/{query['release'][0]}/"
        for pk in [pk for pk, f in api.release_files.items() if f["release"] == uri]:
            del api.release_files[pk]
        return 204, None, {}

    def _create(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        api = self.owner
        if not isinstance(body, dict):
            raise _Refusal(400, "The body must be a JSON object.")
        unknown = set(body) - set(FILE_FIELDS)
        if unknown:
            raise _Refusal(400, f"Unknown fields: {', '.join(sorted(unknown))}.")
        for name in ("os", "release"):
            if not body.get(name):
                message = (
                    f"The '{name}' field has no data and doesn't allow a default or null value."
                )
                raise _Refusal(400, payload={"error": message})
        for name in REQUIRED_FILE_FIELDS:
            if not body.get(name):  # stricter: python.org stores ""
                raise _Refusal(400, f"The '{name}' field has no data and doesn't allow a default.")
        for name, kind in FILE_FIELDS.items():
            if name in body and not isinstance(body[name], kind):
                if kind is bool:
                    message = f"['\u201c{body[name]}\u201d value must be either True or False.']"
                    raise _Refusal(400, payload={"error": message})
                raise _Refusal(400, f"The '{name}' field must be a {kind.__name__}.")  # stricter
        os_pk, release_pk = _pk_of(body["os"], "os"), _pk_of(body["release"], "release")
        for what, pk, table in (("os", os_pk, api.oses), ("release", release_pk, api.releases)):
            if pk not in table:
                uri = f"{API}downloads/{what}/{pk}/"
                message = (
                    f"Could not find the provided downloads/{what} object via resource URI '{uri}'."
                )
                raise _Refusal(400, payload={"error": message})
        if not _SLUG_RE.fullmatch(body["slug"]):
            raise _Refusal(400, "slug: Enter a valid 'slug'.")
        # ReleaseFile.clean(): python.org's own validation, errors per field
        for name in ("url", *SIDECAR_FIELDS):
            if body.get(name) and not body[name].startswith(PYTHON_ORG):
                raise _Refusal(400, payload=_invalid(name, URL_PREFIX_MESSAGE))
        for name, suffix in SIDECAR_FIELDS.items():
            if body.get(name) and body[name] != body["url"] + suffix:
                raise _Refusal(400, payload=_invalid(name, SIDECAR_MESSAGE.format(suffix)))
        record = {**body, "os": f"{API}downloads/os/{os_pk}/"}
        record["release"] = f"{API}downloads/release/{release_pk}/"
        # What only PostgreSQL refuses: tastypie does not catch the IntegrityError or
        # DataError, so python.org answers 500 (a client must look before it tries again).
        too_long = any(
            len(str(body.get(name, ""))) > MAX_LENGTH for name in ("name", "slug", "url")
        )
        if too_long or not -MAX_FILESIZE <= body.get("filesize", 0) < MAX_FILESIZE:
            raise _Refusal(500, SERVER_ERROR)
        for other in api.release_files.values():
            if (
                other["url"] == record["url"]
                or other["slug"] == record["slug"]
                or (
                    record.get("download_button")
                    and other["download_button"]
                    and (other["os"], other["release"]) == (record["os"], record["release"])
                )
            ):
                raise _Refusal(500, SERVER_ERROR)
        pk = api._pk()
        api.release_files[pk] = api._file_repr(pk, record)
        location = f"{api.link_origin}{API}downloads/release_file/{pk}/"  # relative, as python.org
        return 201, None, {"Location": location}


# -- API v2 (Django REST framework): the Release list and detail views -----------------------


def _handle_v2(self: _Handler, path: str, query: Mapping[str, list[str]]) -> None:
    """Answer one API v2 request (``self`` is the request's handler)."""
    api = self.owner
    length = int(self.headers.get("Content-Length") or 0)
    raw = self.rfile.read(length) if length else b""
    status, payload = 500, None
    headers: dict[str, str] = {}
    user: str | None = None
    body: Any = None
    with api._lock:
        fault = api._fault_for(self._op(path, query))
        try:
            if fault is not None and not fault.commit:
                raise _Refusal(fault.status, "injected fault")
            user, staff = _token_user(self)
            if self.command not in ("GET", "HEAD", "OPTIONS"):
                if user is None:
                    raise _Refusal(401, "Authentication credentials were not provided.")
                if not staff:
                    raise _Refusal(403, "You do not have permission to perform this action.")
            if self.command in ("POST", "PUT", "PATCH"):
                body = _json_v2(self, raw)
            status, payload, headers = _route_v2(self, path, query, staff, body)
            if fault is not None:
                raise _Refusal(fault.status, "injected fault after the change was made")
        except _Refusal as refusal:
            status, headers = refusal.status, {}
            payload = (
                refusal.payload if refusal.payload is not None else {"detail": refusal.message}
            )
            if status == 401:
                headers["WWW-Authenticate"] = "Token"
        api.requests.append(
            RecordedRequest(self.command, path, query, user, status, body, api._counts())
        )
    hook = api.after_write if self.command in ("POST", "PUT", "PATCH", "DELETE") else None
    if hook is not None and status < 300:
        hook()
    data = b"" if payload is None else json.dumps(payload).encode()
    self.send_response(status)
    for name, value in headers.items():
        self.send_header(name, value)
    if data:
        self.send_header("Content-Type", "application/json")
    self.send_header("Content-Length", str(len(data)))
    self.end_headers()
    self.wfile.write(data)
    self.wfile.flush()


def _token_user(handler: _Handler) -> tuple[str | None, bool]:
    """DRF's TokenAuthentication: another scheme is anonymous; a token it does not know, or
    no token after the keyword, is a 401 whatever the method."""
    header = handler.headers.get("Authorization")
    if header is None or not header.startswith("Token"):
        return None, False
    match = _TOKEN_RE.fullmatch(header)
    if match is None:
        raise _Refusal(401, "Invalid token header. No credentials provided.")
    for name, (token, staff) in handler.owner.tokens.items():
        if token == match.group(1):
            return name, staff
    raise _Refusal(401, "Invalid token.")


def _json_v2(handler: _Handler, raw: bytes) -> dict[str, Any]:
    kind = handler.headers.get("Content-Type", "").split(";")[0].strip()
    if kind != "application/json":
        raise _Refusal(415, f'Unsupported media type "{kind}" in request.')
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise _Refusal(400, f"JSON parse error - {err}") from err
    if not isinstance(body, dict):
        raise _Refusal(400, "", {"non_field_errors": ["Invalid data. Expected a dictionary."]})
    return body


def _route_v2(
    handler: _Handler,
    path: str,
    query: Mapping[str, list[str]],
    staff: bool,
    body: dict[str, Any] | None,
) -> tuple[int, Any, dict[str, str]]:
    api = handler.owner
    host = handler.headers.get("Host")
    match = re.fullmatch(rf"{API2}downloads/release/(?:(\d+)/)?", path)
    if match is None:
        raise _Refusal(404, "Not found.")
    visible = {pk: r for pk, r in api.releases.items() if staff or r["is_published"]}
    method = handler.command
    if match.group(1) is None:
        if method == "GET":
            return 200, [api._release_v2(pk, host) for pk in _filtered_v2(visible, query)], {}
        if method == "POST":
            assert body is not None
            release: dict[str, Any] = {
                "slug": "",
                "version": 3,
                "is_published": False,
                "is_latest": False,
                "pre_release": False,
                "release_date": None,
                "release_page": None,
                "release_notes_url": "",
                "show_on_download_page": True,
            }
            _write_v2(release, body, partial=False)  # refused: nothing was made
            pk = api._pk()
            api.releases[pk] = {**release, "resource_uri": f"{API}downloads/release/{pk}/"}
            api._saved(pk)
            shown = api._release_v2(pk, host)
            return 201, shown, {"Location": shown["resource_uri"]}
        raise _Refusal(405, f'Method "{method}" not allowed.')
    pk = int(match.group(1))
    if pk not in visible:
        raise _Refusal(404, "No Release matches the given query.")
    if method == "GET":
        return 200, api._release_v2(pk, host), {}
    if method in ("PUT", "PATCH"):
        assert body is not None
        _write_v2(api.releases[pk], body, partial=method == "PATCH")
        api._saved(pk)
        return 200, api._release_v2(pk, host), {}
    if method == "DELETE":
        del api.releases[pk]
        return 204, None, {}
    raise _Refusal(405, f'Method "{method}" not allowed.')


def _filtered_v2(
    releases: Mapping[int, dict[str, Any]], query: Mapping[str, list[str]]
) -> list[int]:
    """django-filter on the viewset's fields; a parameter it does not know is ignored."""
    found = []
    for pk, release in releases.items():
        keep = True
        for key, values in query.items():
            if key not in RELEASE_FILTERS_V2:
                continue
            value = values[-1]
            if key in RELEASE_BOOLEANS:
                truth = {"true": True, "1": True, "false": False, "0": False}.get(value.lower())
                if truth is None:
                    raise _Refusal(400, "", {key: ["Enter a valid boolean."]})
                keep = keep and release[key] is truth
            else:
                keep = keep and str(release[key]) == value
        if keep:
            found.append(pk)
    return found


def _write_v2(release: dict[str, Any], body: Mapping[str, Any], *, partial: bool) -> None:
    """The serializer's validation, then the change (all or nothing)."""
    writable = set(RELEASE_FIELDS_V2) - {"resource_uri"}
    errors: dict[str, list[str]] = {}
    for key, value in body.items():
        if key == "resource_uri":
            continue  # read-only: ignored, as DRF does
        if key not in writable:
            errors[key] = ["Unknown field (the double is stricter than python.org)."]
        elif key in RELEASE_BOOLEANS and not isinstance(value, bool):
            errors[key] = ["Must be a valid boolean."]
    for required in ("name", "slug"):
        if not partial and not body.get(required):
            errors[required] = ["This field is required."]
    if "name" in body and not (isinstance(body["name"], str) and body["name"]):
        errors["name"] = ["This field may not be blank."]
    if errors:
        raise _Refusal(400, "", errors)
    release.update({k: v for k, v in body.items() if k != "resource_uri"})
