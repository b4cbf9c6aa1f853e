"""A test double of a Discourse forum's API (discuss.python.org), as a real HTTP server on
loopback.

    with DiscourseDouble(users={"hugo": "key"}, categories={23: "Core Development"},
                         tags={"release"}) as forum:
        ...  # point a client at forum.url ("http://127.0.0.1:PORT/")
        forum.topics; forum.requests; forum.fail("post", status=502, commit=True)

It enforces what Discourse enforces for the calls relbot makes: the ``Api-Key`` header with
``Api-Username`` naming the key's own user (a single-user key; anything else is a 403 with
Discourse's "The API username or key is invalid."), ``POST /posts.json`` starting a topic
with ``title``, ``raw``, ``category`` and ``tags`` (JSON, or a form with ``tags[]``) within
the default site settings (a title of 15 to 255 characters, a body of 20 to 32,000, a
category that exists, tags that exist), a title already used refused with 422 and
``{"action": "create_post", "errors": ["Title has already been used"]}`` (compared as
Discourse does: case and spacing aside), ``GET /session/current.json`` (404 without a key),
``GET /c/ID/show.json`` and ``GET /topics/created-by/USER.json`` (newest first, 30 a page,
``more_topics_url``).

Faults: :meth:`DiscourseDouble.fail` answers the n-th request of a kind with a status, after
carrying it out (``commit``: an answer lost in transit), or without answering at all
(``hang``: the connection stays open until the test ends it, as a process killed mid-request
would leave it).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from tests.doubles.api_descriptions import (
    DISCOURSE,
    WHOLE,
    Allowance,
    Exchange,
    Violation,
    Violations,
    always_sent,
    description,
    openapi,
)
from tests.doubles.server import LoopbackServer

PAGE_SIZE = 30
INVALID_KEY = (
    "You are not permitted to view the requested resource. The API username or key is invalid."
)
NOT_FOUND = "The requested URL or resource could not be found."

Op = Literal["post", "read", "any"]

# Where Discourse's description lags Discourse: routes it serves (and documents in its own
# API guides) that the description leaves out.
ALLOWANCES = (
    Allowance("GET /session/current.json", WHOLE, "the key's own user: not described"),
    Allowance("GET /topics/created-by/{username}.json", WHOLE, "a user's topics: not described"),
    # Creating a topic with tags (Discourse takes them since 2.x) is missing from the body.
    Allowance("createTopicPostPM", "body.tags", "tags of a new topic: not described"),
    # The double's own test sends a form, as Discourse's Rails controllers take one too.
    Allowance(
        "createTopicPostPM",
        "request.content-type",
        "a form body: not described",
        "application/x-www-form-urlencoded",
    ),
)


@dataclass
class Fault:
    """Answer the ``nth`` request of kind ``op`` (counted from injection) with ``status``;
    ``commit`` carries it out first; ``hang`` never answers (after committing, if asked)."""

    op: Op
    nth: int = 1
    status: int = 500
    commit: bool = False
    hang: bool = False
    start: int = 0
    seen: int = 0


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    username: str | None  # the Api-Username sent
    status: int
    body: Any = None


@dataclass
class TopicRecord:
    id: int
    title: str
    slug: str
    category: int
    tags: tuple[str, ...]
    username: str
    raw: str
    post_id: int


@dataclass
class _State:
    topics: list[TopicRecord] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    next_id: int = 100


class _Refused(Exception):
    def __init__(self, status: int, errors: list[str], **extra: Any) -> None:
        super().__init__("; ".join(errors))
        self.status = status
        self.payload = {"errors": errors, **extra}


class DiscourseDouble:
    """The double; a context manager serving on 127.0.0.1 on a free port."""

    def __init__(
        self,
        users: Mapping[str, str] | None = None,
        *,
        categories: Mapping[int, str] | None = None,
        tags: Iterable[str] = ("release",),
    ) -> None:
        self.users = dict(users or {"hugo": "forum-key"})  # username → its single-user key
        self.categories = dict(categories or {23: "Core Development"})
        self.tags = set(tags)
        self._state = _State()
        self._lock = threading.RLock()
        self._server: LoopbackServer | None = None
        self._hanging: list[threading.Event] = []
        # Every request and answer, held against Discourse's description.
        self.violations = Violations(ALLOWANCES)

    def __enter__(self) -> DiscourseDouble:
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
        for event in self._hanging:
            event.set()
        assert self._server is not None
        self._server.stop()
        if exc_type is None:  # a test that failed already says why
            self.violations.assert_none("Discourse")

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/``: stands in for ``https://discuss.python.org/``."""
        assert self._server is not None, "use the double as a context manager"
        return self._server.url

    # -- setting up and inspecting

    @property
    def topics(self) -> list[TopicRecord]:
        with self._lock:
            return list(self._state.topics)

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._state.requests)

    def posts(self) -> list[Request]:
        """Every ``POST /posts.json`` received, whatever its answer."""
        return [r for r in self.requests if r.method == "POST"]

    def add_topic(self, title: str, username: str = "someone", raw: str = "x" * 40) -> int:
        """A topic started by someone (the admin, another RM) before the bot looks."""
        with self._lock:
            return self._create(title, raw, next(iter(self.categories)), (), username).id

    def fail(
        self, op: Op, *, nth: int = 1, status: int = 500, commit: bool = False, hang: bool = False
    ) -> Fault:
        with self._lock:
            fault = Fault(op, nth, status, commit, hang, start=self._state.counters.get(op, 0))
            self._state.faults.append(fault)
            return fault

    def release_hanging(self) -> None:
        """Let requests held by a ``hang`` fault end (their connection is then closed)."""
        for event in self._hanging:
            event.set()

    # -- internals

    def _fault_for(self, op: Op) -> Fault | None:
        state = self._state
        for name in (op, "any"):
            state.counters[name] = state.counters.get(name, 0) + 1
        for fault in state.faults:
            if fault.op in (op, "any"):
                index = state.counters[fault.op] - fault.start
                if index == fault.nth:
                    fault.seen += 1
                    return fault
        return None

    def _create(
        self, title: str, raw: str, category: int, tags: tuple[str, ...], username: str
    ) -> TopicRecord:
        state = self._state
        topic = TopicRecord(
            id=state.next_id,
            title=title,
            slug=re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-"),
            category=category,
            tags=tags,
            username=username,
            raw=raw,
            post_id=state.next_id + 1000,
        )
        state.next_id += 1
        state.topics.append(topic)
        return topic


def _named(violations: list[Violation], path: str) -> list[Violation]:
    """An undescribed route by its template, as the allowances name it."""
    template = re.sub(
        r"^/topics/created-by/[^/]+\.json$", "/topics/created-by/{username}.json", path
    )
    return [
        Violation(v.operation.replace(path, template), v.field, v.message, v.value)
        for v in violations
    ]


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


class _Handler(BaseHTTPRequestHandler):
    owner: DiscourseDouble
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        forum = self.owner
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        username = self.headers.get("Api-Username")
        body: Any = None
        hang: threading.Event | None = None
        status, payload = 0, None  # no answer, for a request left hanging
        with forum._lock:
            fault = forum._fault_for("post" if self.command == "POST" else "read")
            if fault is not None and fault.hang:
                hang = threading.Event()
                forum._hanging.append(hang)
            try:
                if fault is not None and not fault.commit:
                    if hang is None:
                        raise _Refused(fault.status, ["injected fault"])
                else:
                    user = self._authenticate()
                    if self.command == "POST":
                        body = self._body(raw)
                    query = parse_qs(parts.query)
                    status, payload = self._route(parts.path, query, user, body)
                    if fault is not None and hang is None:
                        raise _Refused(fault.status, ["injected fault after the change was made"])
            except _Refused as refused:
                status, payload = refused.status, refused.payload
            forum._state.requests.append(Request(self.command, parts.path, username, status, body))
        if hang is not None:
            hang.wait()  # the client gives up, or is killed, before any answer comes
            self.close_connection = True
            return
        data = json.dumps(payload).encode()
        exchange = Exchange(
            self.command,
            parts.path,
            {k: v[-1] for k, v in parse_qs(parts.query).items()},
            dict(self.headers),
            raw,
            self.headers.get("Content-Type", "application/json"),
            status,
            data,
        )
        forum.violations.add(_named(openapi(DISCOURSE).check(exchange), parts.path))
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authenticate(self) -> str | None:
        key, username = self.headers.get("Api-Key"), self.headers.get("Api-Username")
        if key is None:
            if self.command == "POST":
                raise _Refused(403, [INVALID_KEY], error_type="invalid_access")
            return None  # an anonymous reader
        # A single-user key acts only as its own user.
        owner = next((u for u, k in self.owner.users.items() if k == key), None)
        if owner is None or username is None or owner.lower() != username.lower():
            raise _Refused(403, [INVALID_KEY], error_type="invalid_access")
        return owner

    def _body(self, raw: bytes) -> dict[str, Any]:
        kind = self.headers.get("Content-Type", "").split(";")[0].strip()
        if kind == "application/json":
            try:
                body = json.loads(raw)
            except ValueError as err:
                raise _Refused(400, [f"invalid JSON: {err}"]) from err
            if not isinstance(body, dict):
                raise _Refused(400, ["the body must be an object"])
            return body
        if kind == "application/x-www-form-urlencoded":
            form = parse_qs(raw.decode(), keep_blank_values=True)
            found: dict[str, Any] = {k: v[-1] for k, v in form.items() if k != "tags[]"}
            found["tags"] = form.get("tags[]", [])
            return found
        raise _Refused(400, [f"unsupported Content-Type {kind!r}"])

    def _route(
        self, path: str, query: Mapping[str, list[str]], user: str | None, body: Any
    ) -> tuple[int, Any]:
        forum = self.owner
        if self.command == "POST" and path == "/posts.json":
            assert user is not None
            return 200, self._post(user, body)
        if self.command != "GET":
            raise _Refused(404, [NOT_FOUND], error_type="not_found")
        if path == "/session/current.json":
            if user is None:
                raise _Refused(404, [NOT_FOUND], error_type="not_found")
            return 200, {"current_user": {"id": 1, "username": user}}
        if match := re.fullmatch(r"/c/(\d+)/show\.json", path):
            category = int(match.group(1))
            if category not in forum.categories:
                raise _Refused(404, [NOT_FOUND], error_type="not_found")
            name = forum.categories[category]
            slug = re.sub(r"[^a-z0-9]+", "-", name.lower())
            return 200, {
                "category": {
                    **_always("/c/{id}/show.json", "get", "category"),
                    "id": category,
                    "name": name,
                    "slug": slug,
                }
            }
        if match := re.fullmatch(r"/topics/created-by/([\w.\-]+)\.json", path):
            return 200, self._created_by(match.group(1), int(query.get("page", ["0"])[-1]))
        raise _Refused(404, [NOT_FOUND], error_type="not_found")

    def _created_by(self, username: str, page: int) -> dict[str, Any]:
        mine = [t for t in reversed(self.owner._state.topics) if t.username == username]
        shown = mine[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]
        listed: dict[str, Any] = {
            "topics": [
                {"id": t.id, "title": t.title, "slug": t.slug, "category_id": t.category}
                for t in shown
            ]
        }
        if len(mine) > (page + 1) * PAGE_SIZE:
            listed["more_topics_url"] = f"/topics/created-by/{username}?page={page + 1}"
        return {"users": [{"username": username}], "topic_list": listed}

    def _post(self, user: str, body: dict[str, Any]) -> dict[str, Any]:
        forum = self.owner
        title, raw = body.get("title"), body.get("raw")
        errors = []
        if not isinstance(title, str) or not title.strip():
            errors.append("Title can't be blank")
        elif not 15 <= len(title) <= 255:
            errors.append("Title must be between 15 and 255 characters")
        if not isinstance(raw, str) or len(raw.strip()) < 20:
            errors.append("Body is too short (minimum is 20 characters)")
        elif len(raw) > 32_000:
            errors.append(f"Body is limited to 32000 characters; you entered {len(raw)}.")
        category = body.get("category")
        if isinstance(category, str) and category.isdigit():
            category = int(category)
        if category not in forum.categories:
            errors.append("Category can't be blank")
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            errors.append("Tags must be a list of names")
        else:
            errors += [f"You can't create the tag '{t}'" for t in tags if t not in forum.tags]
        if isinstance(title, str) and any(_same(t.title, title) for t in forum._state.topics):
            errors.append("Title has already been used")
        if errors:
            raise _Refused(422, errors, action="create_post")
        assert isinstance(title, str) and isinstance(raw, str) and isinstance(category, int)
        topic = forum._create(title, raw, category, tuple(tags), user)
        return {
            **_always("/posts.json", "post"),
            "id": topic.post_id,
            "topic_id": topic.id,
            "topic_slug": topic.slug,
            "post_number": 1,
            "username": user,
            "raw": raw,
        }


def _always(path: str, method: str, field: str | None = None) -> dict[str, Any]:
    """The fields Discourse's description says an answer always has, unset: the double's
    answer then carries each, with its own values laid over them."""
    spec = description(DISCOURSE)
    schema = spec["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    schema = schema["schema"]
    return always_sent(spec, schema["properties"][field] if field else schema)
