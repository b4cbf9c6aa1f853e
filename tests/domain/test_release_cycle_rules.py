"""Parsing the release cycle's JSON: each branch's status and dates, and one sentence naming
the source when the text is not a release cycle."""

from __future__ import annotations

import json

import pytest

from bot.domain.release_cycle import BranchCycle, parse_release_cycle
from bot.errors import ConfigError

ORIGIN = "release-cycle.json"


def test_each_branch_keeps_its_name_status_and_dates() -> None:
    text = json.dumps(
        {
            "3.14": {"status": "bugfix", "first_release": "2025-10-07", "end_of_life": "2030-10"},
            "3.9": {"status": "end-of-life"},
        }
    )

    cycle = parse_release_cycle(text, ORIGIN)

    assert cycle.get("3.14") == BranchCycle("3.14", "bugfix", "2025-10-07", "2030-10")
    assert cycle.get("3.9") == BranchCycle("3.9", "end-of-life", "", "")
    assert cycle.get("3.8") is None


@pytest.mark.parametrize("text", ["{}", "[]", '["3.14"]', '"bugfix"'])
def test_anything_but_an_object_of_branches_is_refused_naming_the_source(text: str) -> None:
    with pytest.raises(ConfigError, match=f"{ORIGIN} is not an object of branches"):
        parse_release_cycle(text, ORIGIN)


def test_json_nested_too_deeply_is_refused_naming_the_source() -> None:
    with pytest.raises(ConfigError, match=f"{ORIGIN} is nested too deeply"):
        parse_release_cycle("[" * 100_000, ORIGIN)


def test_a_branch_that_is_not_an_object_has_no_known_status() -> None:
    with pytest.raises(ConfigError, match=r"branch '3\.14' has no known status"):
        parse_release_cycle('{"3.14": "bugfix"}', ORIGIN)


def test_an_unknown_status_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        parse_release_cycle('{"3.14": {"status": "stable"}}', ORIGIN)

    assert "(one of planned, feature, prerelease, bugfix, security, end-of-life)" in str(err.value)
