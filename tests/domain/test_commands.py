"""The chat grammar: one line in, one command, or one sentence saying what to type instead."""

from __future__ import annotations

import re

import pytest

from bot.domain.commands import (
    CODE_RE,
    MAX_ANNOUNCE_LINE,
    MAX_LINE,
    Abort,
    Announce,
    CommandError,
    Confirm,
    Help,
    Hold,
    Publish,
    Ready,
    Respin,
    Status,
    Unhold,
    Unready,
    Unwaive,
    Waive,
    parse_command,
)
from bot.domain.tags import ReleaseTag

ROLES = ("source", "docs", "windows", "macos")
T = ReleaseTag.parse


def parse(line: str) -> object:
    return parse_command(line, ROLES)


def refusal(line: str) -> str:
    with pytest.raises(CommandError) as caught:
        parse_command(line, ROLES)
    return str(caught.value)


# -- every verb -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("/ready macos 3.14.1", Ready("macos", T("3.14.1"))),
        ("/ready docs 3.14.0rc2", Ready("docs", T("3.14.0rc2"))),
        ("/unready windows 3.14.0b3", Unready("windows", T("3.14.0b3"))),
        ("/status", Status(None)),
        ("/status 3.13.1", Status(T("3.13.1"))),
        ("/hold 3.14.1", Hold(T("3.14.1"), "")),
        (
            "/hold 3.14.1 macOS installer fails to notarize",
            Hold(T("3.14.1"), "macOS installer fails to notarize"),
        ),
        ("/unhold 3.14.1", Unhold(T("3.14.1"))),
        ("/publish 3.14.1", Publish(T("3.14.1"))),
        ("/publish 3.14.1 confirm K7Q2XF", Confirm(T("3.14.1"), "K7Q2XF")),
        ("/respin 3.14.0rc1", Respin(T("3.14.0rc1"))),
        ("/help", Help()),
    ],
)
def test_every_verb_of_the_contract_parses(line: str, command: object) -> None:
    assert parse(line) == command


def test_words_may_be_separated_by_several_spaces_and_tabs() -> None:
    assert parse("  /ready   macos\t3.14.1  ") == Ready("macos", T("3.14.1"))


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("/READY MacOS 3.14.0RC1", Ready("macos", T("3.14.0rc1"))),
        ("/Unready MACOS 3.14.0RC1", Unready("macos", T("3.14.0rc1"))),
        ("/status 3.14.0RC1", Status(T("3.14.0rc1"))),
        ("/hold 3.14.0RC1 wait", Hold(T("3.14.0rc1"), "wait")),
        ("/unhold 3.14.0RC1", Unhold(T("3.14.0rc1"))),
        ("/publish 3.14.0RC1", Publish(T("3.14.0rc1"))),
        ("/respin 3.14.0RC1", Respin(T("3.14.0rc1"))),
        ("/waive 3.14.0RC1 MacOS", Waive(T("3.14.0rc1"), "macos", "")),
        ("/unwaive 3.14.0RC1 MacOS", Unwaive(T("3.14.0rc1"), "macos")),
        ("/abort 3.14.0RC1", Abort(T("3.14.0rc1"))),
        ("/announce 3.14.0RC1", Announce(T("3.14.0rc1"))),
    ],
)
def test_verbs_roles_and_tags_are_case_insensitive(line: str, command: object) -> None:
    assert parse(line) == command


def test_announce_keeps_the_rm_s_words_as_typed_line_breaks_and_spaces_included() -> None:
    line = "/announce 3.14.1 The first maintenance release.\n\nThanks  to   everyone."

    assert parse(line) == Announce(
        T("3.14.1"), "The first maintenance release.\n\nThanks  to   everyone."
    )


def test_announce_with_a_tag_alone_asks_to_see_the_announcement() -> None:
    assert parse("/announce 3.14.1") == Announce(T("3.14.1"), None)


def test_a_hold_reason_keeps_its_words() -> None:
    assert parse("/hold 3.14.1 wait for   CVE-2025-1234") == Hold(
        T("3.14.1"), "wait for CVE-2025-1234"
    )


# -- usage errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("line", ["/ready", "/ready macos", "/ready macos 3.14.1 now"])
def test_ready_with_the_wrong_number_of_words_shows_its_usage(line: str) -> None:
    assert refusal(line) == "Usage: /ready ROLE TAG (for example /ready macos 3.14.1)."


@pytest.mark.parametrize(
    ("line", "usage"),
    [
        ("/unready macos", "/unready ROLE TAG"),
        ("/status 3.14.1 3.14.2", "/status [TAG]"),
        ("/hold", "/hold TAG [reason…]"),
        ("/unhold", "/unhold TAG"),
        ("/publish", "/publish TAG, then /publish TAG confirm <code> [<login>]"),
        ("/publish 3.14.1 confirm", "/publish TAG, then /publish TAG confirm <code> [<login>]"),
        (
            "/publish 3.14.1 please K7Q2XF",
            "/publish TAG, then /publish TAG confirm <code> [<login>]",
        ),
        ("/respin", "/respin TAG"),
    ],
)
def test_each_verb_with_the_wrong_words_shows_its_usage(line: str, usage: str) -> None:
    message = refusal(line)

    assert message.startswith(f"Usage: {usage} (for example /")


@pytest.mark.parametrize("tag", ["3.14", "../3.14.1", "3.14.1rc", "3.14.1/../../etc"])
def test_a_bad_tag_is_quoted_with_an_example(tag: str) -> None:
    message = refusal(f"/ready macos {tag}")

    assert f"'{tag}' is not a release tag" in message
    assert "3.14.1" in message


def test_an_unknown_role_is_refused_listing_the_roles() -> None:
    assert refusal("/ready linux 3.14.1") == (
        "'linux' is not a role; roles are source, docs, windows, macos."
    )


def test_an_unknown_verb_is_refused_pointing_to_help() -> None:
    assert refusal("/deploy 3.14.1") == "'/deploy' is not a command; type /help for the list."


def test_a_near_miss_of_a_verb_is_refused_naming_the_verb_meant() -> None:
    assert refusal("/redy macos 3.14.1") == (
        "'/redy' is not a command (did you mean /ready?); type /help for the list."
    )


@pytest.mark.parametrize("line", ["/help ready", "/help READY", "/help /ready"])
def test_help_on_one_command_takes_its_verb_with_or_without_the_slash(line: str) -> None:
    assert parse(line) == Help("ready")


def test_help_on_an_unknown_command_is_refused_naming_the_verb_meant() -> None:
    assert refusal("/help redy") == (
        "'redy' is not a command (did you mean /ready?); type /help for the list."
    )


@pytest.mark.parametrize("line", ["ready macos 3.14.1", "hello bot", "publish 3.14.1"])
def test_text_without_a_slash_is_not_a_command(line: str) -> None:
    assert refusal(line) == "Commands start with '/'; type /help for the list."


@pytest.mark.parametrize("line", ["", " ", "\t\n"])
def test_an_empty_line_asks_for_a_command(line: str) -> None:
    assert refusal(line) == "Type a command such as /status or /help."


def test_a_command_is_at_most_1000_characters() -> None:
    line = "/hold 3.14.1 " + "x" * (MAX_LINE - len("/hold 3.14.1 "))

    assert parse(line) == Hold(T("3.14.1"), "x" * (MAX_LINE - 13))
    assert refusal(line + "x") == (
        "That message is 1,001 characters long; a command is at most 1,000. "
        "Type /help for the commands."
    )


@pytest.mark.parametrize("indent", ["", "  "])
def test_announce_may_carry_words_up_to_6000_characters(indent: str) -> None:
    start = f"{indent}/announce 3.14.1 "
    words = "x" * (MAX_ANNOUNCE_LINE - len(start))

    assert parse(start + words) == Announce(T("3.14.1"), words)
    assert "a command is at most 6,000" in refusal(start + words + "x")


def test_a_10_kb_line_is_refused_by_length_without_echoing_it() -> None:
    line = "/ready macos " + "3" * 10_000

    message = refusal(line)

    assert "10,013 characters" in message
    assert "3333333333" not in message
    assert len(message) < 200


@pytest.mark.parametrize(
    "line",
    [
        "/ready macos \uff13.14.1",  # fullwidth digit
        "/ready m\u00e1cos 3.14.1",  # a role with an accent
        "/r\u00e9ady macos 3.14.1",  # a verb with an accent
        "/ready macos 3.14.1\u202e",  # RIGHT-TO-LEFT OVERRIDE glued to the tag
        "/ready\u200b macos 3.14.1",  # ZERO WIDTH SPACE glued to the verb
        "/ready macos 3.14.1\x00",
        "/ready \U0001f34e 3.14.1",  # an emoji as the role
        "\u2044ready macos 3.14.1",  # FRACTION SLASH instead of '/'
    ],
)
def test_unicode_lines_get_one_printable_sentence(line: str) -> None:
    message = refusal(line)

    assert "\n" not in message
    assert message.isprintable()
    assert message.endswith(".")


# -- confirmation codes -----------------------------------------------------------------------


@pytest.mark.parametrize("code", ["K7Q2XF", "ABCDEFGHIJKL", "123456", "A1B2C3D4"])
def test_a_code_is_6_to_12_letters_and_digits(code: str) -> None:
    assert parse(f"/publish 3.14.1 confirm {code}") == Confirm(T("3.14.1"), code)


def test_a_lowercase_code_is_accepted_and_upper_cased() -> None:
    assert parse("/publish 3.14.1 CONFIRM k7q2xf") == Confirm(T("3.14.1"), "K7Q2XF")


BAD_CODES = [
    "K7Q2X",  # 5 characters
    "K7Q2XF1234567",  # 13 characters
    "K7Q2XF1234567890ABCDEF",
    "K7Q2X-F",
    "K7Q2XF!",
    "<code>",
    "K7Q2XF\u00c9",
    "\uff2b7Q2XF",  # FULLWIDTH K
    "k7q2xf1234567",
]


@pytest.mark.parametrize("code", BAD_CODES)
def test_a_malformed_code_is_refused_with_what_to_type(code: str) -> None:
    message = refusal(f"/publish 3.14.1 confirm {code}")

    assert message.startswith("A confirmation code is 6 to 12 letters and digits")
    assert "/publish 3.14.1" in message


def test_a_login_code_is_kept_as_typed() -> None:
    assert parse("/publish 3.14.1 confirm K7Q2XF abCD.ef-12") == Confirm(
        T("3.14.1"), "K7Q2XF", "abCD.ef-12"
    )


def test_a_malformed_login_code_is_refused_with_how_to_get_a_new_one() -> None:
    message = refusal("/publish 3.14.1 confirm K7Q2XF ab<cd>ef")

    assert message.startswith("A login code is the code the login page showed, as it showed it")
    assert message.endswith("type /publish 3.14.1 confirm <code> <login>.")


@pytest.mark.parametrize(
    "line",
    [f"/publish 3.14.1 confirm {code}" for code in BAD_CODES]
    + [
        "/publish 3.14 confirm K7Q2XF",
        "/publish ../3.14.1 confirm K7Q2XF",
        "/publish K7Q2XF confirm K7Q2XF",
        "/publish 3.14.1 confirm K7Q2XF K7Q2XF K7Q2XF",
        "/publish 3.14.1 confirmation K7Q2XF",
        "/publish confirm K7Q2XF",
    ],
)
def test_a_refusal_for_a_bad_code_never_repeats_what_looks_like_a_code(line: str) -> None:
    message = refusal(line)

    typed = line.upper()
    echoed = [m for m in re.findall(r"[A-Z0-9]{6,12}", message) if m in typed]
    assert echoed == []


def test_the_code_pattern_is_the_contract() -> None:
    assert CODE_RE.fullmatch("K7Q2XF")
    assert not CODE_RE.fullmatch("k7q2xf")
    assert not CODE_RE.fullmatch("K7Q2X")


@pytest.mark.parametrize("line", ["/K7Q2XF", "/ready K7Q2XF 3.14.1"])
def test_no_refusal_prints_something_that_looks_like_a_code(line: str) -> None:
    message = refusal(line)

    assert not re.search(r"[A-Z0-9]{6,12}", message), message
