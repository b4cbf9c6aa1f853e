"""Release tags: what `/ready ROLE TAG` and `relbot manifest TAG` accept, and what they mean."""

from __future__ import annotations

import pytest

from bot.domain.tags import ReleaseTag, Stage
from bot.errors import TagError


def test_an_rc_tag_normalizes_to_its_version_and_branch() -> None:
    tag = ReleaseTag.parse("3.14.0rc1")

    assert tag.version == "3.14.0"
    assert tag.branch == "3.14"
    assert tag.is_rc
    assert not tag.is_final
    assert tag.is_prerelease
    assert tag.prerelease_suffix == "rc1"


def test_a_final_tag_is_its_own_version() -> None:
    tag = ReleaseTag.parse("3.13.1")

    assert tag.version == "3.13.1"
    assert tag.branch == "3.13"
    assert tag.is_final
    assert not tag.is_rc
    assert not tag.is_prerelease
    assert tag.prerelease_suffix == ""


@pytest.mark.parametrize(
    ("text", "stage", "serial"),
    [
        ("3.14.0a7", Stage.ALPHA, 7),
        ("3.14.0b3", Stage.BETA, 3),
        ("3.14.0rc2", Stage.RC, 2),
        ("3.14.1", Stage.FINAL, 0),
    ],
)
def test_every_stage_is_recognized(text: str, stage: Stage, serial: int) -> None:
    tag = ReleaseTag.parse(text)

    assert tag.stage is stage
    assert tag.serial == serial


@pytest.mark.parametrize(
    "text", ["3.13.1", "3.14.0a7", "3.14.0b3", "3.14.0rc2", "3.15.10", "4.0.0"]
)
def test_a_tag_prints_back_exactly_as_written(text: str) -> None:
    assert str(ReleaseTag.parse(text)) == text
    assert ReleaseTag.parse(str(ReleaseTag.parse(text))) == ReleaseTag.parse(text)


def test_all_prereleases_of_a_version_share_its_public_folder() -> None:
    versions = {
        ReleaseTag.parse(t).version for t in ("3.14.0a1", "3.14.0b3", "3.14.0rc2", "3.14.0")
    }

    assert versions == {"3.14.0"}


@pytest.mark.parametrize(
    "text",
    [
        "3.14",  # a branch, not a release
        "../3.14.1",  # a path, not a tag
        "3.14.1/..",
        "3.14.1 ",  # trailing space
        " 3.14.1",
        "\uff13.14.1",  # FULLWIDTH DIGIT THREE
        "3.\u0661\u0664.1",  # ARABIC-INDIC DIGITS ONE, FOUR
        "3.14.1rc",  # a stage without its serial
        "3.14.0c1",
        "3.14.0RC1",  # the chat grammar lower-cases; the parser itself is exact
        "v3.14.1",
        "3.14.1.post1",
        "3.14.99999999999999999999",  # huge numbers are not versions
        "3.14.0rc99999999999999999999",
        "1" * 5000 + ".14.1",
        "",
        "3.14.1\n",
        "3.14.1\x00",
    ],
)
def test_anything_but_a_release_tag_is_refused(text: str) -> None:
    with pytest.raises(TagError):
        ReleaseTag.parse(text)


@pytest.mark.parametrize("text", ["3.14", "../3.14.1", "3.14.1rc"])
def test_the_refusal_quotes_the_input_and_shows_how_to_write_a_tag(text: str) -> None:
    with pytest.raises(TagError) as caught:
        ReleaseTag.parse(text)

    message = str(caught.value)
    assert f"'{text}'" in message
    assert "3.14.1" in message  # an example of what to type instead
    assert message.endswith(".")
    assert "\n" not in message


def test_the_refusal_shows_invisible_characters_escaped() -> None:
    with pytest.raises(TagError) as caught:
        ReleaseTag.parse("3.14.1\x1b[2J")

    message = str(caught.value)
    assert "\x1b" not in message
    assert "\\x1b" in message


def test_the_refusal_of_a_huge_input_is_short() -> None:
    with pytest.raises(TagError) as caught:
        ReleaseTag.parse("9" * 10_000)

    assert len(str(caught.value)) < 200


def test_at_least_compares_branches_numerically() -> None:
    tag = ReleaseTag.parse("3.14.0b1")

    assert tag.at_least("3.14")
    assert tag.at_least("3.9")
    assert not tag.at_least("3.15")
    assert not ReleaseTag.parse("3.9.20").at_least("3.10")


def test_tags_sort_in_release_order() -> None:
    written = ["3.14.0", "3.14.0rc1", "3.14.0a1", "3.13.9", "3.14.0b2", "3.14.1"]

    ordered = [str(t) for t in sorted(ReleaseTag.parse(t) for t in written)]

    assert ordered == ["3.13.9", "3.14.0a1", "3.14.0b2", "3.14.0rc1", "3.14.0", "3.14.1"]


def test_a_tag_is_not_older_than_itself() -> None:
    tag = ReleaseTag.parse("3.14.1")
    assert not tag < ReleaseTag.parse("3.14.1")
