"""How a refusal quotes what someone typed: shortened, escaped, confirmation codes masked."""

from __future__ import annotations

from bot.domain.tags import quote_input


def test_input_of_forty_characters_is_quoted_whole() -> None:
    typed = "x" * 40

    assert quote_input(typed) == f"'{typed}'"


def test_longer_input_is_cut_to_forty_characters_ending_in_an_ellipsis() -> None:
    assert quote_input("x" * 41) == "'" + "x" * 39 + "…'"


def test_what_looks_like_a_confirmation_code_is_masked() -> None:
    assert quote_input("publish K7Q2ZD") == "'publish <…>'"


def test_printable_input_is_quoted_as_typed_even_with_quotes_and_backslashes() -> None:
    assert quote_input("it's 3.14\\0") == "'it's 3.14\\0'"
