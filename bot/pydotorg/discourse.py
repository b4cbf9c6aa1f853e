"""Posting the announcement on a Discourse forum (discuss.python.org) as the release manager.

:class:`DiscourseClient` implements :class:`bot.ports.Forum` with Discourse's API: headers
``Api-Key`` and ``Api-Username`` (a single-user key: the topic is the RM's own),
``POST /posts.json`` with ``title``, ``raw``, ``category`` and ``tags`` to start a topic,
``GET /topics/created-by/USER.json`` to find one already started.

A topic is never posted twice: the POST is sent once, never retried by the HTTP client (an
answer lost on the way leaves it unknown whether the topic exists), and the caller looks for
the topic by title before any new attempt. The forum itself refuses a second topic with a
title it has ("Title has already been used"), which :class:`bot.errors.TitleTaken` reports.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, Self
from urllib.parse import quote

import httpx

from bot.domain.announcement import Announcement, Topic
from bot.errors import ForumError, TitleTaken
from bot.http_client import HttpClient, OtherOrigin, RetryPolicy

_log = logging.getLogger(__name__)

TITLE_TAKEN: Final = "Title has already been used"
_MAX_PAGES: Final = 3  # the RM's newest topics: an announcement just posted is on page one


def same_title(a: str, b: str) -> bool:
    """Whether two titles are the same for the forum (case and spacing aside)."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


class DiscourseClient:
    """One user's access to one Discourse forum (``url``, ending in ``/``). ``api_key`` is
    read from the environment by the caller (``key_source`` names where). Blocking: run it in
    a worker thread. The key never appears in logs, errors or ``repr``."""

    def __init__(
        self,
        url: str,
        api_key: str,
        username: str,
        *,
        category: int,
        tags: Sequence[str] = (),
        key_source: str = "the forum's API key",
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.url = url if url.endswith("/") else url + "/"
        self.username = username
        self.category = category
        self.tags = tuple(tags)
        self._key = api_key
        self._key_source = key_source
        headers = {"Api-Key": api_key, "Api-Username": username, "Accept": "application/json"}
        # Reads retry rate limits and server trouble; the one POST is never resent blindly.
        self._reads = HttpClient(
            origin=self.url, headers=headers, transport=transport, timeout=timeout, retry=retry
        )
        self._posts = HttpClient(
            origin=self.url,
            headers=headers,
            transport=transport,
            timeout=timeout,
            retry=RetryPolicy(attempts=1),
        )

    def __repr__(self) -> str:
        return f"DiscourseClient(url={self.url!r}, username={self.username!r})"

    def close(self) -> None:
        """Close the HTTP connections."""
        self._reads.close()
        self._posts.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the port

    def preflight(self) -> None:
        """Check the key is this user's and the category is there for it."""
        session = self._get("session/current.json", "this user's session")
        user = session.get("current_user")
        name = user.get("username") if isinstance(user, dict) else None
        if not isinstance(name, str) or not same_title(name, self.username):
            raise ForumError(
                f"{self._host} does not take the key in {self._key_source} as "
                f"{self.username!r}; use a single-user key of that user."
            )
        self._get(f"c/{self.category}/show.json", f"category {self.category}")

    def check(self) -> list[str]:
        try:
            self.preflight()
        except ForumError as err:
            return [f"discourse: {err}"]
        return []

    def find_topic(self, title: str) -> Topic | None:
        path: str | None = f"topics/created-by/{quote(self.username)}.json"
        for _ in range(_MAX_PAGES):
            if path is None:
                return None
            page = self._get(path, f"the topics of {self.username!r}")
            listed = page.get("topic_list")
            topics = listed.get("topics") if isinstance(listed, dict) else None
            if not isinstance(topics, list):
                raise ForumError(f"{self._host} listed topics without a topic list.")
            for topic in topics:
                found = str(topic.get("title", "")) if isinstance(topic, dict) else ""
                if isinstance(topic, dict) and same_title(found, title):
                    return self._topic(topic.get("id"), topic.get("slug"), found)
            more = listed.get("more_topics_url") if isinstance(listed, dict) else None
            path = _as_json(str(more)) if more else None
        return None

    def post(self, announcement: Announcement) -> Topic:
        body = {
            "title": announcement.title,
            "raw": announcement.raw,
            "category": self.category,
            "tags": list(self.tags),
        }
        title = announcement.title
        what = f"post {title!r}"
        try:
            response, _ = self._posts.send(
                "POST",
                self._url("posts.json"),
                content=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
        except httpx.TransportError as err:
            raise ForumError(
                f"{self._host} could not be reached to {what} ({type(err).__name__}); "
                "before trying again the bot looks for the topic, so it is never posted twice."
            ) from err
        if response.status_code == 200:
            answer = _json(response, what, self._host)
            topic = self._topic(answer.get("topic_id"), answer.get("topic_slug"), title)
            _log.info("posted %r on %s: %s", announcement.title, self._host, topic.url)
            return topic
        if response.status_code >= 500:  # it may have been posted all the same
            raise ForumError(
                f"{self._host} answered HTTP {response.status_code} to the request to {what}; "
                "before trying again the bot looks for the topic, so it is never posted twice."
            )
        errors = _errors(response)
        if response.status_code == 422 and any(TITLE_TAKEN in e for e in errors):
            raise TitleTaken(f"{self._host} has a topic titled {announcement.title!r} already.")
        raise self._refused(response, what, errors)

    def search_url(self, title: str) -> str:
        return f"{self.url}search?q={quote(title)}"

    # -- HTTP

    @property
    def _host(self) -> str:
        return httpx.URL(self.url).host

    def _topic(self, ident: object, slug: object, title: str) -> Topic:
        if not isinstance(ident, int) or not isinstance(slug, str):
            raise ForumError(f"{self._host} answered without the topic's id and slug.")
        return Topic(ident, title, f"{self.url}t/{quote(slug)}/{ident}")

    def _url(self, reference: str) -> httpx.URL:
        try:
            return self._reads.join(reference)
        except OtherOrigin as err:
            raise ForumError(
                f"{self._host} pointed to another site ({err.url.host}); refusing."
            ) from None

    def _get(self, path: str, what: str) -> Mapping[str, Any]:
        try:
            response, _ = self._reads.send("GET", self._url(path))
        except httpx.TransportError as err:
            raise ForumError(
                f"{self._host} could not be reached to look up {what} ({type(err).__name__} "
                f"after {self._reads.retry.attempts} attempts); try again later."
            ) from err
        if response.status_code != 200:
            raise self._refused(response, f"look up {what}", _errors(response))
        body = _json(response, f"look up {what}", self._host)
        return body

    def _refused(self, response: httpx.Response, what: str, errors: list[str]) -> ForumError:
        reason = "; ".join(errors)[:300].replace(self._key, "***") or response.reason_phrase
        if response.status_code in (401, 403):
            return ForumError(
                f"{self._host} refused the key to {what} (HTTP {response.status_code}: "
                f"{reason}); check {self._key_source}: a single-user key of {self.username!r}."
            )
        return ForumError(
            f"{self._host} refused to {what} (HTTP {response.status_code}: {reason})."
        )


def _as_json(link: str) -> str:
    """A page link the forum gives (``/topics/created-by/hugo?page=1``) as the JSON API's
    path, relative to the forum's root."""
    path, _, query = link.lstrip("/").partition("?")
    path = path if path.endswith(".json") else path + ".json"
    return f"{path}?{query}" if query else path


def _errors(response: httpx.Response) -> list[str]:
    """Discourse's reasons (``{"errors": [...]}``), or the body's first words."""
    try:
        body = response.json()
    except ValueError:
        return [" ".join(response.text.split())[:200]] if response.text.strip() else []
    if isinstance(body, dict) and isinstance(body.get("errors"), list):
        return [str(e) for e in body["errors"]]
    return [json.dumps(body)[:200]]


def _json(response: httpx.Response, what: str, host: str) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ForumError(f"{host} answered the request to {what} with something unexpected.")
    return body
