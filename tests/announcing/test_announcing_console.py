"""Rehearsals through the real `relbot run` (console platform): from the confirmation to a
public release page and one forum topic whose text is the one shown, and a bot killed while
posting that converges to one topic after a restart."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.demo import stage_demo
from bot.domain.profile import load_profile
from tests.console_driver import RELBOT, publish_through_console
from tests.doubles.discourse import DiscourseDouble
from tests.doubles.downloads import PublicSite
from tests.doubles.pydotorg import PydotorgDouble
from tests.pinned import NO_SIGNATURES, RELEASE_CYCLE_LINE
from tests.waiting import Drained, wait_until

TAG = "3.14.1"
WORDS = "This is the first maintenance release of Python 3.14."
ENV = {
    "RELBOT_TEST_AUTH": "rm:v1-key-value",
    "RELBOT_TEST_TOKEN": "v2-token-value",
    "RELBOT_TEST_FORUM": "forum-key-value",
}
ROLES = ("source", "docs", "windows", "macos")


@dataclass
class Services:
    api: PydotorgDouble
    forum: DiscourseDouble
    site: PublicSite


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    public = tmp_path / "relbot-data" / "public"
    with (
        PydotorgDouble(
            users={"rm": ("v1-key-value", True)}, tokens={"rm": ("v2-token-value", True)}
        ) as api,
        DiscourseDouble(users={"hugo": "forum-key-value"}) as forum,
        PublicSite(public) as site,
    ):
        api.add_release("Python 3.14.0", published=True, latest=True)
        api.add_release("Python 3.14.1")
        (tmp_path / "relbot.toml").write_text(
            RELEASE_CYCLE_LINE
            + textwrap.dedent(f"""
            [pydotorg]
            kind = "api"
            url = "{api.url}"
            auth_env = "RELBOT_TEST_AUTH"
            release_page = true
            token_env = "RELBOT_TEST_TOKEN"

            [cdn]
            purge = ["{api.base_url}downloads/"]

            [downloads]
            url = "{site.url}"

            [discourse]
            url = "{forum.url}"
            api_key_env = "RELBOT_TEST_FORUM"
            username = "hugo"

            [people.hugo]
            rm = ["3.14"]
            roles = ["source", "docs", "windows", "macos"]
            """)
            + NO_SIGNATURES,
            encoding="utf-8",
        )
        public.mkdir(parents=True)  # `relbot run` creates no folder
        stage_demo(tmp_path / "relbot-data" / "staging", load_profile("cpython"))
        yield Services(api, forum, site)


def test_console_rehearsal_ends_with_a_public_page_and_the_topic_the_plan_showed(
    tmp_path: Path, services: Services
) -> None:
    lines = [f"/ready {role} {TAG}" for role in ROLES]
    lines += [f"/announce {TAG} {WORDS}", f"/announce {TAG}", f"/publish {TAG}"]

    session = publish_through_console(tmp_path, lines, TAG, env=ENV)

    assert session.returncode == 0, session.stderr
    assert f"Published {TAG}" in session.after_confirm
    (topic,) = services.forum.topics
    posted = f"{topic.title}\n\n{topic.raw}"
    assert posted in session.before_confirm  # what /announce printed, byte for byte
    digest = hashlib.sha256(posted.encode()).hexdigest()[:12]
    plan = session.before_confirm[session.before_confirm.index("Publish plan for") :]
    assert f"SHA-256 {digest}" in plan
    page = services.api.release("Python 3.14.1")
    assert page["is_published"] and page["is_latest"] and not page["pre_release"]
    assert services.api.latest() == ["Python 3.14.1"]
    assert f"Discussion: {services.forum.url}t/{topic.slug}/{topic.id}" in session.after_confirm
    assert "/3.14.1/Python-3.14.1.tar.xz" in services.site.paths
    everything = session.before_confirm + session.after_confirm + session.stderr
    assert not any(secret in everything for secret in ENV.values())


def test_a_bot_killed_while_posting_posts_nothing_more_after_its_restart(
    tmp_path: Path, services: Services
) -> None:
    forum = services.forum
    forum.fail("post", commit=True, hang=True)  # the topic is made; the answer never comes
    lines = [f"/ready {role} {TAG}" for role in ROLES]
    lines += [f"/announce {TAG} {WORDS}", f"/publish {TAG}"]
    bot = subprocess.Popen(
        [str(RELBOT), "run"],
        cwd=tmp_path,
        env={**os.environ, **ENV},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert bot.stdin is not None
    out, err = Drained(bot.stdout), Drained(bot.stderr)
    bot.stdin.write("\n".join(lines) + "\n")
    bot.stdin.flush()
    confirm = wait_until(
        "the plan",
        lambda: re.search(rf"/publish {TAG} confirm [A-Z0-9]+", "".join(out.lines)),
    ).group(0)

    bot.stdin.write(confirm + "\n")
    bot.stdin.flush()
    wait_until("the topic posted", lambda: forum.topics)
    bot.kill()  # while it waits for the forum's answer
    bot.wait(timeout=30)
    forum.release_hanging()

    again = subprocess.run(
        [str(RELBOT), "run"],
        cwd=tmp_path,
        env={**os.environ, **ENV},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert again.returncode == 0, again.stderr + "".join(err.lines)
    assert len(forum.topics) == 1 and len(forum.posts()) == 1
    (topic,) = forum.topics
    assert f"Discussion: {forum.url}t/{topic.slug}/{topic.id}" in again.stdout
    audit = subprocess.run(
        [str(RELBOT), "audit", TAG], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert "discourse: posted by an earlier attempt: " in audit
    assert len(re.findall(r" published +\d+ files", audit)) == 1
    assert "release-page: made public (latest" in audit
