"""The announcing rules where they show: the text drafted for the forum (its frame, its links,
its files), what the plan says of the release page for a final and a prerelease, what each
step after the registration journals (what `relbot audit` prints), the notice of an
unexpected change on python.org, and the count of public-site mismatches."""

from __future__ import annotations

import textwrap
from importlib import resources
from pathlib import Path

import pytest

from bot.config import Config, load_config
from bot.domain.announcement import AnnouncementError
from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.service.pipeline import announcing
from bot.service.render import audit_line
from tests.announcing.conftest import WORDS, Announcing
from tests.announcing.test_announcing_flow import staged_and_worded
from tests.conftest import World
from tests.pinned import RELEASE_CYCLE_LINE

TAG = "3.14.1"
TARGETS = (
    "3.14.1/Python-3.14.1.tgz",
    "3.14.1/Python-3.14.1.tgz.sigstore",
    "doc/3.14.1/python-3.14.1-docs.epub",
)
PEOPLE = '\n[people.hugo]\nrm = ["3.14", "3.15"]\n'

# -- the text drafted for the forum -----------------------------------------------------------


def config(folder: Path, tables: str, *, profile: str = "cpython") -> Config:
    path = folder / "relbot.toml"
    text = f'{RELEASE_CYCLE_LINE}profile = "{profile}"\n{textwrap.dedent(tables)}{PEOPLE}'
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def drafted(loaded: Config, tag: str = TAG) -> str:
    """The body of ``tag``'s announcement for :data:`TARGETS`, as the forum would get it."""
    return announcing.draft_for(loaded, ReleaseTag.parse(tag), TARGETS, WORDS).raw


FORUM = '[discourse]\nusername = "hugo"\n'
PER_BRANCH = FORUM + 'template = "frames/{branch}.md"\n'


def test_the_files_are_linked_where_the_downloads_table_says_they_are_served(
    tmp_path: Path,
) -> None:
    loaded = config(tmp_path, FORUM + '[downloads]\nurl = "http://127.0.0.1:8000/ftp"\n')

    text = drafted(loaded)

    assert "* [Python-3.14.1.tgz](http://127.0.0.1:8000/ftp/3.14.1/Python-3.14.1.tgz)" in text


def test_without_a_downloads_table_the_files_are_linked_where_the_profile_serves_them(
    tmp_path: Path,
) -> None:
    text = drafted(config(tmp_path, FORUM))

    assert "(https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tgz)" in text


def test_signature_bundles_are_published_but_not_listed(tmp_path: Path) -> None:
    text = drafted(config(tmp_path, FORUM))

    assert "[Python-3.14.1.tgz]" in text
    assert "Python-3.14.1.tgz.sigstore" not in text


def test_the_configured_changelog_is_linked_for_the_release(tmp_path: Path) -> None:
    tables = FORUM + 'changelog = "https://docs.python.org/{branch}/changes-{tag}.html"\n'

    text = drafted(config(tmp_path, tables))

    assert "* Changelog: https://docs.python.org/3.14/changes-3.14.1.html" in text


def test_without_a_forum_table_the_built_in_frame_links_the_docs_changelog(
    tmp_path: Path,
) -> None:
    text = drafted(config(tmp_path, ""))

    assert "* Changelog: https://docs.python.org/3.14/whatsnew/changelog.html" in text


def test_a_profile_without_a_release_page_or_files_url_makes_no_link_up(tmp_path: Path) -> None:
    cpython = resources.files("bot.domain").joinpath("profiles", "cpython.toml").read_text("utf-8")
    page = '"release page" = "https://www.python.org/downloads/release/python-{tag_nodots}/"\n'
    assert page in cpython
    bare = cpython.replace(page, "")[: cpython.index("\n[pydotorg]")]  # no files_url either
    (tmp_path / "bare.toml").write_text(bare, encoding="utf-8")

    text = drafted(config(tmp_path, FORUM, profile="bare.toml"))

    (line,) = [line for line in text.splitlines() if line.startswith("* Release page:")]
    assert line.rstrip() == "* Release page:"
    assert "* [Python-3.14.1.tgz](3.14.1/Python-3.14.1.tgz)" in text  # by its public path


@pytest.mark.parametrize(
    ("template", "file"),
    [
        ("frames/{branch}.md", "frames/3.15.md"),
        ("frames/{tag}.md", "frames/3.15.0rc1.md"),
        ("frames/{version}.md", "frames/3.15.0.md"),
    ],
)
def test_a_template_named_for_the_release_is_the_frame_of_its_text(
    tmp_path: Path, template: str, file: str
) -> None:
    (tmp_path / "frames").mkdir()
    frame = "{words}\n\nThe frame of the 3.15 series, for {tag}: {release_page}\n"
    (tmp_path / file).write_text(frame, encoding="utf-8")

    text = drafted(config(tmp_path, FORUM + f'template = "{template}"\n'), "3.15.0rc1")

    assert text.startswith(WORDS + "\n\nThe frame of the 3.15 series, for 3.15.0rc1: https://")
    assert "Thanks to all of the many volunteers" not in text  # not the built-in frame


def test_a_template_that_cannot_be_read_names_the_file_and_the_release(tmp_path: Path) -> None:
    loaded = config(tmp_path, PER_BRANCH)

    with pytest.raises(AnnouncementError) as refused:
        drafted(loaded)

    said = str(refused.value)
    assert said.startswith(f"discourse.template: cannot read {tmp_path / 'frames' / '3.14.md'}")
    assert "write the frame of 3.14.1's announcement there" in said


def test_a_template_that_is_not_utf8_is_named_with_its_first_bad_byte(tmp_path: Path) -> None:
    (tmp_path / "frames").mkdir()
    (tmp_path / "frames" / "3.14.md").write_bytes(b"{words}\n\nCaf\xe9 for {tag}.\n")

    with pytest.raises(AnnouncementError) as refused:
        drafted(config(tmp_path, PER_BRANCH))

    assert str(refused.value) == (
        f"discourse.template: {tmp_path / 'frames' / '3.14.md'} is not UTF-8 (byte 0xe9 at "
        "offset 12); save the file as UTF-8."
    )


def test_an_unknown_placeholder_in_a_branch_s_template_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "frames").mkdir()
    (tmp_path / "frames" / "3.14.md").write_text("{words}\n\n{highlights}\n", encoding="utf-8")

    with pytest.raises(AnnouncementError) as refused:
        drafted(config(tmp_path, PER_BRANCH))

    path = tmp_path / "frames" / "3.14.md"
    assert str(refused.value).startswith(
        f"discourse.template ({path}) has unknown placeholders {{highlights}}"
    )


def test_a_template_is_read_as_utf8_whatever_the_machine_s_locale(
    tmp_path: Path, ascii_locale: None
) -> None:
    (tmp_path / "frames").mkdir()
    frame = "{words}\n\n— Łukasz, for the release team\n"
    (tmp_path / "frames" / "3.14.md").write_text(frame, encoding="utf-8")
    loaded = config(tmp_path, PER_BRANCH)

    text = drafted(loaded)

    assert "— Łukasz, for the release team" in text


# -- what each step journals --------------------------------------------------------------------


def journaled(world: World, step: str) -> str:
    """What ``relbot audit`` says ``step`` of the publish of :data:`TAG` did (its last run)."""
    lines = [
        audit_line(e)
        for e in world.store.events(ReleaseTag.parse(TAG))
        if e.kind is EventKind.STEP_DONE and e.data["step"] == step
    ]
    assert lines, f"{step} is not done"
    return lines[-1].split(f" {step}: ", 1)[1]


async def published(a: Announcing) -> None:
    """Stage 3.14.1 with the RM's words, plan and confirm its publish."""
    await staged_and_worded(a)
    confirmed = await a.world.say("hugo", await a.world.plan(TAG))
    assert not confirmed.private, confirmed.text


async def test_steps_with_nothing_configured_say_so_in_the_audit(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)

    confirmed = await world.say("hugo", await world.plan(TAG))

    assert not confirmed.private, confirmed.text
    assert journaled(world, "downloads") == "no public URL configured"
    assert journaled(world, "release-page") == "left to the RM (the python.org admin)"
    assert journaled(world, "discourse") == "no forum configured"


async def test_the_check_of_the_public_site_counts_files_and_bundles(
    announcing: Announcing,
) -> None:
    await published(announcing)

    said = journaled(announcing.world, "downloads")

    assert said.startswith("20 files match their public URLs (1 .sigstore bundle; ")


async def test_the_newest_final_s_page_is_made_latest_and_its_predecessor_named(
    announcing: Announcing,
) -> None:
    await published(announcing)

    said = journaled(announcing.world, "release-page")

    assert said == "made public (latest; no longer latest: Python 3.14.0)"


async def test_every_release_no_longer_latest_is_named(announcing: Announcing) -> None:
    api = announcing.api
    pk = api.add_release("Python 3.13.9", published=True)
    api.releases[pk]["is_latest"] = True  # an old record: two latest releases of Python 3

    await published(announcing)

    said = journaled(announcing.world, "release-page")
    assert said == "made public (latest; no longer latest: Python 3.13.9, Python 3.14.0)"


async def test_a_page_that_is_not_the_newest_final_is_made_public_but_not_latest(
    announcing: Announcing,
) -> None:
    announcing.api.add_release("Python 3.15.0", published=True, latest=True)

    await published(announcing)

    assert journaled(announcing.world, "release-page") == "made public (not latest)"
    assert announcing.api.latest() == ["Python 3.15.0"]


async def test_a_page_made_public_in_the_admin_already_is_left_as_it_is(
    announcing: Announcing,
) -> None:
    api = announcing.api
    api.set_latest("Python 3.14.1")
    (page,) = [r for r in api.releases.values() if r["name"] == "Python 3.14.1"]
    page["is_published"] = True  # the RM ticked "Is Published" by hand

    await published(announcing)

    assert journaled(announcing.world, "release-page") == "public already"


async def test_other_latest_flags_changed_with_the_page_are_told_to_the_publisher(
    announcing: Announcing,
) -> None:
    a, api = announcing, announcing.api
    old = [api.add_release(f"Python 2.7.{n}", published=True, version=2) for n in (17, 18)]
    for pk in old:
        api.releases[pk]["is_latest"] = True

    def meddle() -> None:  # python.org clears is_latest elsewhere as the page goes public
        if api.release("Python 3.14.1")["is_published"]:
            for pk in old:
                api.releases[pk]["is_latest"] = False

    api.after_write = meddle
    await published(a)

    (notice,) = [m for m in a.world.chat.posts if "also changed is_latest" in m.text]
    assert notice.kind is ChannelKind.NOTICE and notice.tag == TAG
    assert notice.mentions == ("hugo",)
    assert (
        "Making 3.14.1's release page public also changed is_latest on Python 2.7.17, "
        "Python 2.7.18, which it should not have; check those releases in the python.org "
        "admin." in notice.text
    )
    assert journaled(a.world, "release-page") == (
        "made public (latest; no longer latest: Python 3.14.0; unexpected is_latest change: "
        "Python 2.7.17, Python 2.7.18)"
    )


async def test_every_failed_check_of_the_public_site_is_counted(announcing: Announcing) -> None:
    a, world = announcing, announcing.world
    await staged_and_worded(a)
    line = await world.plan(TAG)
    tarball = world.public / "3.14.1" / "Python-3.14.1.tgz"

    def tamper(path: str) -> None:  # the public copy differs from the plan, and stays so
        if path == "/3.14.1/Python-3.14.1.tgz":
            tarball.write_bytes(b"not the confirmed bytes")

    a.site.before_serving = tamper
    await world.say("hugo", line)
    await world.gate.scan()

    assert b"relbot_public_mismatches_total 2.0" in world.gate.metrics.prometheus()


async def test_a_forum_configured_after_the_confirmation_gets_no_topic(
    announcing: Announcing,
) -> None:
    a, world = announcing, announcing.world
    world.conn.forum = None  # the bot runs without [discourse] when the RM confirms
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    tarball = world.public / "3.14.1" / "Python-3.14.1.tgz"
    original: list[bytes] = []

    def tamper(path: str) -> None:  # the publish waits at the check of the public site
        if path == "/3.14.1/Python-3.14.1.tgz" and not original:
            original.append(tarball.read_bytes())
            tarball.write_bytes(b"not the confirmed bytes")

    a.site.before_serving = tamper
    stopped = await world.say("hugo", line)
    assert stopped.private and "did not finish" in stopped.text
    tarball.write_bytes(original[0])
    a.restart()  # with [discourse] now: the plan confirmed has no announcement to post
    await world.gate.resume()

    assert journaled(world, "discourse") == "the confirmed plan has no announcement"
    assert a.forum.topics == []


async def test_the_topic_posted_replaces_the_profile_s_own_discussion_link(
    announcing: Announcing,
) -> None:
    a, world = announcing, announcing.world
    cpython = resources.files("bot.domain").joinpath("profiles", "cpython.toml").read_text("utf-8")
    own = '"discussion" = "https://discuss.python.org/c/core-dev/23"\n'
    (world.root / "linked.toml").write_text(
        cpython.replace("[links]\n", "[links]\n" + own), encoding="utf-8"
    )
    settings = world.root / "relbot.toml"
    text = settings.read_text(encoding="utf-8")
    assert 'profile = "cpython"' in text
    settings.write_text(text.replace('profile = "cpython"', 'profile = "linked.toml"'), "utf-8")
    world.config = load_config(settings)  # the bot restarted with a profile linking a forum
    world.profile = world.config.profile
    a.restart()

    await published(a)

    (announced,) = world.chat.texts(ChannelKind.ANNOUNCEMENT)
    (topic,) = a.forum.topics
    assert f"Discussion: {a.forum.url}t/{topic.slug}/{topic.id}" in announced
    assert announced.count("Discussion: ") == 1 and "core-dev/23" not in announced


def test_the_plan_says_how_the_release_page_is_made_public_for_a_final_and_a_prerelease(
    announcing: Announcing,
) -> None:
    world = announcing.world
    shown = {}
    for name in ("3.14.1", "3.15.0a2"):
        tag = ReleaseTag.parse(name)
        notes = announcing_notes(world, tag)
        shown[name] = [n for n in notes if n.startswith("Then its release page")]
    assert shown == {
        "3.14.1": [
            "Then its release page is made public on python.org (is_published, pre_release "
            "false, and is_latest if it is the newest final)."
        ],
        "3.15.0a2": [
            "Then its release page is made public on python.org (is_published, pre_release true)."
        ],
    }


def announcing_notes(world: World, tag: ReleaseTag) -> list[str]:
    plan = PublishPlan(tag, ())
    return announcing.plan_notes(world.config, world.conn, plan, world.store.release(tag))
