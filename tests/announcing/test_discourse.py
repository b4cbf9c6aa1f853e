"""Posting on a Discourse forum, against the forum double."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest

from bot.domain.announcement import Announcement
from bot.errors import ForumError, TitleTaken
from bot.http_client import RetryPolicy
from bot.pydotorg.discourse import DiscourseClient
from tests.doubles.discourse import DiscourseDouble

KEY = "hugo-single-user-key"
FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)
TEXT = Announcement(
    "Python 3.14.1 is now available!",
    "This is the first maintenance release of 3.14.\n\n* Release page: https://x.test/\n",
)


@pytest.fixture
def forum() -> Iterator[DiscourseDouble]:
    with DiscourseDouble(users={"hugo": KEY, "ned": "ned-key"}, tags={"release"}) as double:
        yield double


def client(forum: DiscourseDouble, key: str = KEY, username: str = "hugo") -> DiscourseClient:
    return DiscourseClient(
        forum.url,
        key,
        username,
        category=23,
        tags=["release"],
        key_source="DISCOURSE_API_KEY",
        retry=FAST,
    )


def test_a_topic_is_posted_as_the_rm_with_the_text_byte_for_byte(
    forum: DiscourseDouble,
) -> None:
    topic = client(forum).post(TEXT)

    (posted,) = forum.topics
    assert (posted.title, posted.raw) == (TEXT.title, TEXT.raw)
    assert (posted.username, posted.category, posted.tags) == ("hugo", 23, ("release",))
    assert topic.url == f"{forum.url}t/python-3-14-1-is-now-available/{posted.id}"


def test_a_title_the_forum_has_already_is_refused_and_nothing_is_posted(
    forum: DiscourseDouble,
) -> None:
    forum.add_topic("PYTHON 3.14.1  is now available!", username="ned")

    with pytest.raises(TitleTaken):
        client(forum).post(TEXT)

    assert len(forum.topics) == 1


def test_the_rm_s_own_topic_is_found_by_its_title(forum: DiscourseDouble) -> None:
    forum.add_topic("Python 3.14.0 is now available!", username="hugo")
    posted = client(forum).post(TEXT)

    found = client(forum).find_topic("python 3.14.1 is now available!")

    assert found == posted
    assert client(forum).find_topic("Python 3.14.2 is now available!") is None


def test_an_older_topic_of_a_busy_rm_is_found_on_a_later_page(forum: DiscourseDouble) -> None:
    forum.add_topic(TEXT.title, username="hugo")
    for n in range(40):  # newer topics push it past the first page
        forum.add_topic(f"A question about the build, number {n}", username="hugo")

    found = client(forum).find_topic(TEXT.title)

    assert found is not None and found.title == TEXT.title
    pages = [r.path for r in forum.requests if r.path.startswith("/topics/created-by/")]
    assert pages == ["/topics/created-by/hugo.json"] * 2


def test_a_post_whose_answer_is_lost_is_not_sent_again(forum: DiscourseDouble) -> None:
    forum.fail("post", status=502, commit=True)  # created, then the answer is lost

    with pytest.raises(ForumError, match="never posted twice"):
        client(forum).post(TEXT)

    assert len(forum.posts()) == 1  # the HTTP client did not retry the POST
    assert client(forum).find_topic(TEXT.title) is not None  # what the step checks first


def test_a_wrong_key_or_another_user_is_a_sentence_without_the_key(
    forum: DiscourseDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong_key = client(forum, key="not-the-key")
    not_hers = client(forum, key="ned-key")  # ned's key, sent as hugo

    (problem,) = wrong_key.check()
    with pytest.raises(ForumError) as caught:
        not_hers.post(TEXT)

    assert "HTTP 403" in problem and "DISCOURSE_API_KEY" in problem
    assert "API username or key is invalid" in str(caught.value)
    assert "not-the-key" not in problem + caplog.text + repr(wrong_key)
    assert forum.topics == []
    assert client(forum).check() == []


def test_a_category_the_forum_lacks_is_caught_before_posting(forum: DiscourseDouble) -> None:
    lost = DiscourseClient(forum.url, KEY, "hugo", category=99, retry=FAST)

    with pytest.raises(ForumError, match="category 99"):
        lost.preflight()


def test_the_forum_unreachable_is_a_sentence(forum: DiscourseDouble) -> None:
    gone = DiscourseClient("http://127.0.0.1:9/", KEY, "hugo", category=23, retry=FAST)

    with pytest.raises(ForumError, match="could not be reached"):
        gone.post(TEXT)


# -- the double enforces Discourse's rules -----------------------------------------------------


def test_the_double_refuses_what_discourse_refuses(forum: DiscourseDouble) -> None:
    headers = {"Api-Key": KEY, "Api-Username": "hugo"}
    short = {"title": "Too short", "raw": "x" * 30, "category": 23}
    unknown_tag = {"title": TEXT.title, "raw": TEXT.raw, "category": 23, "tags": ["nope"]}

    no_key = httpx.post(f"{forum.url}posts.json", json=short)
    too_short = httpx.post(f"{forum.url}posts.json", json=short, headers=headers)
    bad_tag = httpx.post(f"{forum.url}posts.json", json=unknown_tag, headers=headers)
    form = httpx.post(
        f"{forum.url}posts.json",
        data={"title": TEXT.title, "raw": TEXT.raw, "category": "23", "tags[]": "release"},
        headers=headers,
    )
    again = httpx.post(
        f"{forum.url}posts.json",
        json={"title": TEXT.title, "raw": TEXT.raw, "category": 23},
        headers=headers,
    )

    assert no_key.status_code == 403
    assert too_short.status_code == 422 and "Title must be" in too_short.json()["errors"][0]
    assert bad_tag.status_code == 422
    assert form.status_code == 200 and forum.topics[0].tags == ("release",)
    assert again.status_code == 422
    assert again.json() == {"errors": ["Title has already been used"], "action": "create_post"}
