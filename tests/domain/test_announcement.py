"""The announcement's title and text, drafted from a frame and the RM's words."""

from __future__ import annotations

import pytest

from bot.domain.announcement import (
    MAX_BODY,
    MAX_WORDS,
    MIN_BODY,
    Announcement,
    AnnouncementError,
    Frame,
    check_template,
    draft,
    title,
    words_problem,
)
from bot.domain.history import Event, EventKind, fold, plan_from_json, plan_to_json
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag

TAG = ReleaseTag.parse("3.14.1")
FRAME = Frame(
    template="{words}\n\nPage: {release_page}\nChangelog: {changelog}\n\n{files}\n",
    release_page="https://www.python.org/downloads/release/python-3141/",
    files_url="https://www.python.org/ftp/python/",
    sidecars=(".sigstore", ".sig", ".crt", ".spdx.json"),
)
TARGETS = [
    "3.14.1/Python-3.14.1.tgz",
    "3.14.1/Python-3.14.1.tgz.sigstore",
    "3.14.1/Python-3.14.1.tar.xz.spdx.json",
    "3.14.1/Python-3.14.1.tar.xz",
    "3.14.1/amd64/core.msi",
    "doc/3.14.1/python-3.14.1-docs.epub",
    "index-windows.json",
]


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("3.14.1", "Python 3.14.1 is now available!"),
        ("3.15.0", "Python 3.15.0 is now available!"),
        ("3.15.0b2", "Python 3.15.0 beta 2 is here!"),
        ("3.16.0a1", "Python 3.16.0 alpha 1 is here!"),
        ("3.15.0rc1", "Python 3.15.0 release candidate 1 is here!"),
    ],
)
def test_titles_follow_cpython_s_form(tag: str, expected: str) -> None:
    assert title(ReleaseTag.parse(tag)) == expected


@pytest.mark.parametrize("tag", ["0.0.0b1", "999.999.999rc999", "999.999.999"])
def test_every_title_fits_the_forum_s_limits_of_15_to_255_characters(tag: str) -> None:
    assert 15 <= len(title(ReleaseTag.parse(tag))) <= 255


def test_the_draft_fills_the_frame_with_links_files_and_words() -> None:
    text = draft(FRAME, TAG, "3.14.1", TARGETS, "  The first maintenance release.  ")

    assert text.title == "Python 3.14.1 is now available!"
    assert text.raw == (
        "The first maintenance release.\n\n"
        "Page: https://www.python.org/downloads/release/python-3141/\n"
        "Changelog: https://docs.python.org/3.14/whatsnew/changelog.html\n\n"
        "* [Python-3.14.1.tar.xz](https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tar.xz)\n"
        "* [Python-3.14.1.tgz](https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tgz)\n"
    )
    assert text.text == text.title + "\n\n" + text.raw


def test_every_placeholder_is_filled_from_the_tag() -> None:
    frame = Frame(template="{title}|{tag}|{version}|{branch}|{words}")

    text = draft(frame, ReleaseTag.parse("3.15.0rc2"), "3.15.0", [], "Hello.")

    assert text.raw == "Python 3.15.0 release candidate 2 is here!|3.15.0rc2|3.15.0|3.15|Hello.\n"


def test_a_release_without_files_says_so_in_place_of_the_list() -> None:
    text = draft(Frame(template="{words}\n\n{files}"), TAG, "3.14.1", [], "The release.")

    assert "No files of 3.14.1 are published with this announcement." in text.raw


def test_a_placeholder_drafting_does_not_know_is_left_as_written() -> None:
    text = draft(Frame(template="{words}\n\n{highlights}"), TAG, "3.14.1", [], "The release.")

    assert text.raw == "The release.\n\n{highlights}\n"


def test_an_empty_value_leaves_one_blank_line_not_a_gap() -> None:
    frame = Frame(template="{words}\n\n{release_page}\n\n{files}")  # no release page

    text = draft(frame, TAG, "3.14.1", [], "The release.")

    assert text.raw == (
        "The release.\n\nNo files of 3.14.1 are published with this announcement.\n"
    )


def test_words_are_inserted_as_typed_and_never_expanded_again() -> None:
    text = draft(FRAME, TAG, "3.14.1", TARGETS, "Say {files} and {tag} literally.")

    assert "Say {files} and {tag} literally." in text.raw


def test_the_hash_covers_title_and_text() -> None:
    one = Announcement("Python 3.14.1 is now available!", "Hello, world of Python.\n")
    other = Announcement("Python 3.14.1 is now available!", "Hello, world of Python!\n")

    assert one.sha256 != other.sha256 and len(one.short_hash) == 12


def test_a_template_with_a_placeholder_drafting_does_not_know_is_refused() -> None:
    with pytest.raises(AnnouncementError, match=r"unknown placeholders \{highlights\}"):
        check_template("{words} {highlights}", "discourse.template (a.md)")
    check_template("{words} {files} {release_page}", "ok")


def test_the_refusal_of_a_template_names_its_unknown_placeholders_and_the_known_ones() -> None:
    with pytest.raises(AnnouncementError) as caught:
        check_template("{words} {intro} {highlights}", "discourse.template (a.md)")

    assert str(caught.value) == (
        "discourse.template (a.md) has unknown placeholders {highlights}, {intro}; use "
        "{title}, {tag}, {version}, {branch}, {release_page}, {changelog}, {files}, {words}."
    )


def test_a_text_the_forum_would_refuse_is_refused_before() -> None:
    with pytest.raises(AnnouncementError, match="at least 20"):
        draft(Frame(template="{words}"), TAG, "3.14.1", [], "Too short.")
    with pytest.raises(AnnouncementError, match="at most 32,000"):
        draft(Frame(template="{words}" * 10), TAG, "3.14.1", [], "x" * (MAX_BODY // 9))


def test_a_text_of_exactly_the_forum_s_shortest_or_longest_length_is_taken() -> None:
    shortest = draft(Frame(template="{words}"), TAG, "3.14.1", [], "x" * (MIN_BODY - 1))
    longest = draft(Frame(template="{words}"), TAG, "3.14.1", [], "x" * (MAX_BODY - 1))

    assert (len(shortest.raw), len(longest.raw)) == (MIN_BODY, MAX_BODY)


def test_words_must_be_plain_text_of_a_reasonable_length() -> None:
    assert words_problem("Line one.\n\nLine two\twith a tab.") == ""
    assert words_problem("   ") == "Your words are empty; type them after the tag."
    assert words_problem("bell \x07") == (
        "Your words hold a control character; type plain text (line breaks are fine)."
    )
    assert words_problem("x" * MAX_WORDS) == ""
    assert words_problem("x" * 10_000) == "Your words are 10,000 characters; at most 5,000 fit."


def test_the_plan_binds_the_announcement_and_keeps_it_in_the_journal() -> None:
    files = (PlanFile("a.tgz", "3.14.1/a.tgz", "source", 3, "a" * 64),)
    text = Announcement("Python 3.14.1 is now available!", "Twenty characters or more.\n")
    bare, announced = PublishPlan(TAG, files), PublishPlan(TAG, files, (), text)
    edited = PublishPlan(TAG, files, (), Announcement(text.title, text.raw + "More.\n"))

    assert len({bare.digest, announced.digest, edited.digest}) == 3
    assert plan_from_json(TAG, plan_to_json(announced)) == announced
    assert plan_from_json(TAG, plan_to_json(bare)) == bare
    assert "announcement" not in plan_to_json(bare)  # older journals fold as before


def test_the_rm_s_last_words_are_the_release_s() -> None:
    events = [
        Event(1, 1.0, "3.14.1", "hugo", EventKind.ANNOUNCEMENT_WORDS, {"words": "First."}),
        Event(2, 2.0, "3.14.1", "hugo", EventKind.ANNOUNCEMENT_WORDS, {"words": "Second."}),
    ]

    assert fold(TAG, events).announcement_words == "Second."
