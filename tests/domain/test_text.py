"""Untrusted text made safe to show, the sentence for a file that is not UTF-8, and the short
listing of many paths."""

from __future__ import annotations

import pytest

from bot.domain.text import listing, not_utf8, shown


def test_a_byte_that_is_not_utf8_in_a_file_name_is_shown_as_that_byte() -> None:
    name = b"python-3.14.0\x80\xff.tgz".decode("utf-8", "surrogateescape")

    assert shown(name) == "python-3.14.0\\x80\\xff.tgz"


def test_a_lone_surrogate_that_is_no_byte_is_shown_as_its_code_point() -> None:
    assert shown("a\udd00b") == "a\\udd00b"


@pytest.mark.parametrize(
    ("typed", "seen"),
    [("a\nb", "a\\nb"), ("a\rb", "a\\rb"), ("a\tb", "a\\tb"), ("a\x1b[2Jb", "a\\x1b[2Jb")],
)
def test_newlines_tabs_and_escapes_are_shown_as_their_usual_escapes(typed: str, seen: str) -> None:
    assert shown(typed) == seen


def test_a_file_that_is_not_utf8_names_the_byte_and_its_offset() -> None:
    with pytest.raises(UnicodeDecodeError) as caught:
        b"tag = 3.14\xe9\xe9".decode()

    assert "not UTF-8 (byte 0xe9 at offset 10)" in not_utf8(caught.value)


def test_five_paths_are_all_listed() -> None:
    assert listing(["a", "b", "c", "d", "e"]) == "a, b, c, d, e"


def test_a_sixth_path_is_counted_instead_of_listed() -> None:
    assert listing(["a", "b", "c", "d", "e", "f"]) == "a, b, c, d, e and 1 more"
