"""The services' own API descriptions, vendored in tests/vendor/api-descriptions/, held against
every request a double receives and every answer it gives.

Discord's and Discourse's are OpenAPI 3.1: openapi-core checks path, method, parameters, body and
answer against them; because neither closes its objects (Discord's never says
``additionalProperties: false``), a field the description names nowhere is reported too (a
wrong field name would otherwise pass). Slack's is Swagger 2.0, which openapi-core does not read:
its parameters are checked here by name, place and type; its schemas (Swagger's JSON Schema,
which OpenAPI 3.0 kept) are carried over unchanged into an OpenAPI 3.0 document, and
openapi-core's 3.0 schema validator holds each answer to the method's success or error schema.

A double keeps a :class:`Violations` and fails at its close when it holds any, naming the
operation and the field. Each description is read once per test session.

Where a description is known to lag the service, an :class:`Allowance` beside the double says
which field of which operation, and why; nothing else is let through.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse
from openapi_core.validation.schemas import oas30_read_schema_validators_factory

FOLDER = Path(__file__).parent.parent / "vendor" / "api-descriptions"
DISCORD = "discord-openapi-74fda0f.json.gz"
DISCOURSE = "discourse-openapi-6737ac2.json.gz"
SLACK = "slack-web-openapi-v2-bc08db4.json.gz"
WHOLE = "(operation)"  # the field of a violation that concerns the operation itself


@dataclass(frozen=True)
class Violation:
    operation: str  # the description's operationId, or "METHOD /path" when it has none
    field: str  # where: "query.limit", "body.nonce", "answer.message.ts", or WHOLE
    message: str
    value: str | None = None  # the value refused, where the description lists those allowed

    def __str__(self) -> str:
        return f"{self.operation}: {self.field}: {self.message}"


@dataclass(frozen=True)
class Allowance:
    """One known lag of a description: ``field`` of ``operation`` is let through (only with
    ``value``, when one is named)."""

    operation: str
    field: str
    reason: str
    value: str | None = None

    def covers(self, violation: Violation) -> bool:
        return (self.operation, self.field) == (violation.operation, violation.field) and (
            self.value is None or self.value == violation.value
        )


@dataclass
class Violations:
    """What a double found wrong, kept until its close (thread-safe: Discourse's double
    answers from several threads)."""

    allowances: Iterable[Allowance] = ()
    found: list[Violation] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, violations: Iterable[Violation]) -> None:
        kept = [v for v in violations if not any(a.covers(v) for a in self.allowances)]
        with self._lock:
            self.found.extend(kept)

    def assert_none(self, service: str) -> None:
        with self._lock:
            found = list(dict.fromkeys(str(v) for v in self.found))
        assert not found, f"{service} double disagrees with {service}'s API description:\n" + (
            "\n".join(found)
        )


@functools.cache
def description(name: str) -> dict[str, Any]:
    """One vendored description, parsed once per session."""
    with gzip.open(FOLDER / name) as f:
        loaded: dict[str, Any] = json.load(f)
    return loaded


# -- OpenAPI 3.1 (Discord, Discourse) ------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One request as the double received it and the answer it gave."""

    method: str
    path: str  # as requested, including the server's base path (/api/v10/...)
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    content_type: str
    status: int
    answer: bytes
    answer_type: str = "application/json"


class OpenAPIDescription:
    """An OpenAPI 3.1 description and openapi-core's validators of it."""

    def __init__(self, name: str) -> None:
        self.spec = description(name)
        # Checking the description itself takes seconds and is the publisher's job.
        self.app = OpenAPI.from_dict(self.spec, config=Config(spec_validator_cls=None))
        server = self.spec["servers"][0]
        url = server["url"]
        for variable, value in server.get("variables", {}).items():
            url = url.replace("{" + variable + "}", value["default"])
        parts = urlsplit(url)
        self.host_url = f"{parts.scheme}://{parts.netloc}"
        self.base = parts.path.rstrip("/")  # "/api/v10" for Discord, "" for Discourse
        self._routes = [
            (re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)) + "$"), p)
            for p in self.spec["paths"]
        ]

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]] | None:
        """The operation a request reaches: its name and the description's entry."""
        below = path.removeprefix(self.base)
        # A literal segment wins over a template ({id} vs @me), as a router matches.
        matches = sorted(
            (p for pattern, p in self._routes if pattern.match(below)), key=lambda p: p.count("{")
        )
        for template in matches:
            operation = self.spec["paths"][template].get(method.lower())
            if operation is not None:
                return operation.get("operationId", f"{method} {template}"), operation
        return None

    def check(self, exchange: Exchange) -> list[Violation]:
        found = self.operation(exchange.method, exchange.path)
        if found is None:
            path = exchange.path.removeprefix(self.base)
            where = f"{exchange.method} {path}"
            return [Violation(where, WHOLE, "no such operation in the description")]
        name, operation = found
        request = MockRequest(
            self.host_url,
            exchange.method,
            exchange.path,
            args=dict(exchange.query),
            headers=dict(exchange.headers),
            data=exchange.body,
            content_type=exchange.content_type,
        )
        violations = [
            v
            for error in self.app.iter_request_errors(request)
            for v in _violation(name, "request", error, exchange.content_type)
        ]
        violations += self._undeclared_query(name, operation, exchange)
        body = _json(exchange.body)
        schema = _media_schema(operation.get("requestBody"), exchange.content_type)
        if body is not None and schema is not None:
            violations += [
                Violation(name, "body" + p, "not in the description")
                for p in sorted(undeclared(body, schema, self.spec))
            ]
        response = self._response(operation, exchange.status)
        if response is None:
            return violations  # a status the description does not describe: nothing to hold
        answer = MockResponse(exchange.answer, exchange.status, content_type=exchange.answer_type)
        violations += [
            v
            for error in self.app.iter_response_errors(request, answer)
            for v in _violation(name, "answer", error, exchange.answer_type)
        ]
        schema = _media_schema(response, exchange.answer_type)
        answered = _json(exchange.answer)
        if answered is not None and schema is not None:
            violations += [
                Violation(name, "answer" + p, "not in the description")
                for p in sorted(undeclared(answered, schema, self.spec))
            ]
        return violations

    def _undeclared_query(
        self, name: str, operation: dict[str, Any], exchange: Exchange
    ) -> list[Violation]:
        template = next(p for p, ops in self.spec["paths"].items() if operation in ops.values())
        parameters = operation.get("parameters", []) + self.spec["paths"][template].get(
            "parameters", []
        )
        known = {
            _resolve(self.spec, p)["name"]
            for p in parameters
            if _resolve(self.spec, p).get("in") == "query"
        }
        return [
            Violation(name, f"query.{key}", "no such query parameter in the description")
            for key in exchange.query
            if key not in known
        ]

    def _response(self, operation: dict[str, Any], status: int) -> dict[str, Any] | None:
        responses = operation.get("responses", {})
        for key in (str(status), f"{str(status)[0]}XX", "default"):
            if key in responses:
                found: dict[str, Any] = _resolve(self.spec, responses[key])
                return found
        return None


@functools.cache
def openapi(name: str) -> OpenAPIDescription:
    return OpenAPIDescription(name)


def _violation(operation: str, side: str, error: Exception, media: str) -> list[Violation]:
    """openapi-core's error, as the fields it concerns (from jsonschema's paths) and why."""
    cause = error.__cause__ or error
    schema_errors = getattr(cause, "schema_errors", None) or getattr(error, "schema_errors", None)
    if schema_errors:
        found = []
        for schema_error in schema_errors:
            where = _side(side, error) + _path(schema_error.absolute_path)
            if schema_error.validator == "additionalProperties":  # name each field itself
                named = set(schema_error.schema.get("properties", {}))
                found += [
                    Violation(operation, f"{where}.{extra}", "not in the description")
                    for extra in sorted(set(schema_error.instance) - named)
                ]
            elif schema_error.validator == "required":  # name the missing field itself
                missing = schema_error.message.split("'")[1]
                found.append(Violation(operation, f"{where}.{missing}", schema_error.message))
            else:
                found.append(Violation(operation, where, schema_error.message))
        return found
    if "mimetype" in str(cause):
        return [Violation(operation, f"{side}.content-type", str(cause), media.split(";")[0])]
    name = getattr(cause, "name", None)
    where = f"{_side(side, error)}.{name}" if name else _side(side, error)
    return [Violation(operation, where, f"{type(error).__name__}: {cause}")]


def always_sent(spec: Mapping[str, Any], schema: Any) -> dict[str, Any]:
    """Every field an object schema says is always there, with the value an unset one has
    (null where allowed, else empty or zero): what a double adds to its own answer's fields."""
    schema = _resolve(spec, schema)
    empty: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}
    empty |= {"array": [], "object": {}}
    filled: dict[str, Any] = {}
    for name in schema.get("required", []):
        kinds = _resolve(spec, schema["properties"][name]).get("type", "null")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        filled[name] = None if "null" in kinds else empty[kinds[0]]
    return filled


def _path(parts: Iterable[str | int]) -> str:
    """A field's path, list indexes as ``[]``: an allowance names the field, not an item."""
    return "".join("[]" if isinstance(p, int) else f".{p}" for p in parts)


def _side(side: str, error: Exception) -> str:
    kind = type(error).__name__.lower()
    if "parameter" in kind or "security" in kind:
        return "query" if side == "request" else side
    if side == "request":
        return "body"
    return side


def _json(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _media_schema(holder: dict[str, Any] | None, content_type: str) -> dict[str, Any] | None:
    if not holder:
        return None
    media = holder.get("content", {}).get(content_type.split(";")[0].strip())
    return None if media is None else media.get("schema")


def _resolve(spec: Mapping[str, Any], schema: Any) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        target: Any = spec
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        schema = target
    return schema


def _branches(spec: Mapping[str, Any], schema: Any) -> Iterator[dict[str, Any]]:
    """A schema and, flattened, every schema its allOf/oneOf/anyOf combine."""
    schema = _resolve(spec, schema)
    if not isinstance(schema, dict):
        return
    yield schema
    for key in ("allOf", "oneOf", "anyOf"):
        for branch in schema.get(key, []):
            yield from _branches(spec, branch)


def undeclared(value: Any, schema: Any, spec: Mapping[str, Any], at: str = "") -> set[str]:
    """The paths in ``value`` of object fields that ``schema`` names nowhere (in any branch of
    a oneOf/anyOf, so only a field no shape of it has). Objects left open (no properties
    listed, or additionalProperties/patternProperties allowed) take anything."""
    branches = list(_branches(spec, schema))
    if isinstance(value, dict):
        properties: dict[str, list[Any]] = {}
        extra: list[Any] = []
        described = False
        for branch in branches:
            for name, sub in branch.get("properties", {}).items():
                properties.setdefault(name, []).append(sub)
            more = branch.get("additionalProperties")
            if isinstance(more, dict) and more:
                extra.append(more)
            if "properties" in branch:
                described = True
            if (
                more is True
                or (isinstance(more, dict) and not more)
                or "patternProperties" in branch
            ):
                return set()
        if not described:
            return set()
        found: set[str] = set()
        for name, sub_value in value.items():
            candidates = properties.get(name) or extra
            if not candidates:
                found.add(f"{at}.{name}")
                continue
            found |= set.intersection(
                *(undeclared(sub_value, c, spec, f"{at}.{name}") for c in candidates)
            )
        return found
    if isinstance(value, list):
        items = [b["items"] for b in branches if isinstance(b.get("items"), dict)]
        if not items:
            return set()
        found = set()
        for element in value:
            found |= set.intersection(*(undeclared(element, c, spec, f"{at}[]") for c in items))
        return found
    return set()


# -- Swagger 2.0 (Slack) --------------------------------------------------------------------------


class SlackDescription:
    """Slack's Web API description (Swagger 2.0): each method's parameters by name, place and
    type, its answers against the method's success or error schema."""

    def __init__(self) -> None:
        self.spec = description(SLACK)
        # Swagger's definitions and each method's answers, as an OpenAPI 3.0 document's
        # components (the schemas themselves unchanged, their references moved along).
        moved = json.loads(
            json.dumps(self.spec).replace('"#/definitions/', '"#/components/schemas/')
        )
        schemas = dict(moved["definitions"])
        for path, entry in moved["paths"].items():
            for operation in entry.values():
                for key, response in operation["responses"].items():
                    if "schema" in response:
                        schemas[f"{path[1:]} {key}"] = response["schema"]
        document = {
            "openapi": "3.0.3",
            "info": {"title": "Slack Web API answers", "version": "2"},
            "paths": {},
            "components": {"schemas": schemas},
        }
        self._answers = OpenAPI.from_dict(document, config=Config(spec_validator_cls=None)).spec
        self._validators: dict[str, Any] = {}

    def _answer_errors(self, method: str, key: str, answer: Mapping[str, Any]) -> list[Any]:
        """jsonschema's errors of ``answer`` against the method's ``key`` ("200", "default")."""
        name = f"{method} {key}"
        if name not in self._validators:
            schema = self._answers / "components" / "schemas" / name
            made = oas30_read_schema_validators_factory.create(self._answers, schema)
            self._validators[name] = made.validator
        return list(self._validators[name].iter_errors(dict(answer)))

    def check(
        self,
        method: str,
        verb: str,
        via: str,
        arguments: Mapping[str, Any],
        answer: Mapping[str, Any],
    ) -> list[Violation]:
        """``via``: where the arguments came: "query", "form" or "json"."""
        entry = self.spec["paths"].get(f"/{method}")
        if entry is None:
            return [Violation(method, WHOLE, "no such method in the description")]
        described_verb, operation = next(iter(entry.items()))
        violations = []
        # Slack takes every method by POST, and by GET the ones described as GET.
        if verb.lower() not in (described_verb, "post"):
            violations.append(Violation(method, WHOLE, f"{verb} not accepted"))
        if via == "json" and "application/json" not in operation.get("consumes", []):
            violations.append(Violation(method, "body", "a JSON body is not accepted"))
        parameters = {p["name"]: p for p in operation.get("parameters", [])}
        for name, value in arguments.items():
            declared = parameters.get(name)
            if name == "token" or declared is None:
                why = "the token goes in the Authorization header" if name == "token" else ""
                violations.append(
                    Violation(method, f"{via}.{name}", why or "no such argument in the description")
                )
                continue
            problem = _slack_type_problem(declared.get("type"), value, textual=via != "json")
            if problem:
                violations.append(Violation(method, f"{via}.{name}", problem))
        for name, declared in parameters.items():
            if declared.get("required") and name != "token" and name not in arguments:
                violations.append(Violation(method, f"{via}.{name}", "required, not sent"))
        key = "200" if answer.get("ok") else "default"
        for error in self._answer_errors(method, key, answer):
            path = _path(error.absolute_path)
            if error.validator == "additionalProperties":  # name each field itself
                extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
                violations += [
                    Violation(method, f"answer{path}.{name}", "not in the description")
                    for name in extra
                ]
                continue
            if error.validator == "required":
                path += "." + error.message.split("'")[1]
            value = str(error.instance) if error.validator == "enum" else None
            violations.append(Violation(method, f"answer{path}", error.message, value))
        return violations


@functools.cache
def slack() -> SlackDescription:
    return SlackDescription()


def _slack_type_problem(kind: str | None, value: Any, *, textual: bool) -> str | None:
    """Whether ``value`` can be of Swagger type ``kind``: a form or query sends text; a JSON
    body sends JSON, where Slack also takes structured arguments (blocks, view) as such."""
    if kind in (None, "string"):
        return None
    text = str(value).lower() if textual or not isinstance(value, bool) else None
    if kind == "boolean":
        ok = isinstance(value, bool) or text in ("true", "false", "1", "0")
        return None if ok else f"{value!r} is not a boolean"
    if kind in ("integer", "number"):
        try:
            (int if kind == "integer" else float)(value)
        except (TypeError, ValueError):
            return f"{value!r} is not an {kind}"
    return None
