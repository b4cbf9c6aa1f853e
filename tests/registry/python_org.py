"""One face for the two python.orgs the contract tests run against: relbot's double
(tests/doubles/pydotorg.py) and python.org's own app (tests/pythondotorg_app.py).

Everything a test does or looks at goes through python.org's public API (v1 to read records,
v2 to make and read releases), so the same test reads the same answers from both; only setting
up a rate limit reaches inside (the double's counters, the app's cache table). Clients under
test go through an :class:`AnswerDropper` in front of it (:attr:`PythonOrg.proxy`).
"""

from __future__ import annotations

import base64
import pickle
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tests.doubles.pydotorg import THROTTLE_AT, THROTTLE_WINDOW, PydotorgDouble
from tests.pythondotorg_app import LIVE_DATABASE, RM_KEY, RM_TOKEN, PythonOrgApp
from tests.registry.answer_dropper import AnswerDropper

KEY = RM_KEY
TOKEN = RM_TOKEN
RM_AUTH = f"rm:{RM_KEY}"


@dataclass
class PythonOrg:
    """python.org, double or real (``kind``), behind :attr:`proxy`."""

    kind: str
    upstream: str  # http://127.0.0.1:PORT/, standing in for https://www.python.org/
    proxy: AnswerDropper
    exhaust: Callable[[str, int], None]  # (user, seconds until the limit lifts)

    @property
    def url(self) -> str:
        """API v1's root through the proxy: what relbot is configured with."""
        return self.proxy.base_url + "api/v1/"

    def v1(self) -> httpx.Client:
        """A staff client of the API straight (not through the proxy): another writer."""
        return httpx.Client(
            base_url=self.upstream + "api/v1/",
            headers={"Authorization": f"ApiKey {RM_AUTH}"},
            timeout=30,
        )

    def v2(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.upstream + "api/v2/",
            headers={"Authorization": f"Token {TOKEN}"},
            timeout=30,
        )

    def add_release(
        self, name: str, *, published: bool = False, latest: bool = False, version: int = 3
    ) -> None:
        """A Release as the RM makes it in the admin (through API v2)."""
        number = name.removeprefix("Python ")
        body = {
            "name": name,
            "slug": re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
            "version": version,
            "is_published": published,
            "is_latest": latest,
            "pre_release": bool(re.search(r"(a|b|rc)\d+$", number)),
        }
        with self.v2() as client:
            answer = client.post("downloads/release/", json=body)
        assert answer.status_code == 201, answer.text

    def release(self, name: str) -> dict[str, Any]:
        with self.v2() as client:
            (found,) = client.get("downloads/release/", params={"name": name}).json()
        assert isinstance(found, dict)
        return found

    def latest(self, version: int = 3) -> list[str]:
        """The names of the releases of ``version`` flagged is_latest."""
        with self.v2() as client:
            found = client.get("downloads/release/", params={"version": version}).json()
        return sorted(r["name"] for r in found if r["is_latest"])

    def release_pk(self, name: str) -> str:
        with self.v1() as client:
            (found,) = client.get("downloads/release/", params={"name": name}).json()["objects"]
        return str(found["resource_uri"]).rstrip("/").rsplit("/", 1)[-1]

    def os_uri(self, slug: str) -> str:
        with self.v1() as client:
            (found,) = client.get("downloads/os/", params={"slug": slug}).json()["objects"]
        return _path(found["resource_uri"])

    def records(self, release: str) -> dict[str, dict[str, Any]]:
        """The release's records by file name, the OS as its slug."""
        pk = self.release_pk(release)
        with self.v1() as client:
            oses = client.get("downloads/os/", params={"limit": 0}).json()["objects"]
            slugs = {_path(o["resource_uri"]): o["slug"] for o in oses}
            page = client.get("downloads/release_file/", params={"release": pk, "limit": 0})
        out = {}
        for record in page.json()["objects"]:
            name = str(record["url"]).rsplit("/", 1)[-1]
            out[name] = {**record, "os": slugs[_path(record["os"])]}
        return out

    def create(self, record: dict[str, Any]) -> httpx.Response:
        """POST a record straight to python.org (another writer)."""
        with self.v1() as client:
            return client.post("downloads/release_file/", json=record)


def _path(uri: str) -> str:
    return httpx.URL(uri).path


def on_double(double: PydotorgDouble, proxy: AnswerDropper) -> PythonOrg:
    def exhaust(user: str, seconds: int) -> None:
        double.accesses[user] = [int(time.time()) - THROTTLE_WINDOW + seconds] * THROTTLE_AT

    return PythonOrg("double", double.base_url, proxy, exhaust)


def on_app(app: PythonOrgApp, proxy: AnswerDropper) -> PythonOrg:
    def exhaust(user: str, seconds: int) -> None:
        # tastypie's CacheThrottle keeps each user's request times in Django's cache: a row
        # of the database cache table, the value pickled then base64-encoded (written here
        # straight, as a Django process would take seconds to start)
        times = [int(time.time()) - THROTTLE_WINDOW + seconds] * THROTTLE_AT
        value = base64.b64encode(pickle.dumps(times, pickle.HIGHEST_PROTOCOL)).decode()
        app.psql(
            "INSERT INTO django_cache_table (cache_key, value, expires) VALUES "
            f"(':1:{user}_accesses', '{value}', now() + interval '7 days') "
            "ON CONFLICT (cache_key) DO UPDATE SET value = EXCLUDED.value, "
            "expires = EXCLUDED.expires",
            LIVE_DATABASE,
        )

    return PythonOrg("real", app.base_url, proxy, exhaust)
