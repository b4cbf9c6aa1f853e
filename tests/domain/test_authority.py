"""Who may do what: a role's holders claim it, RMs of the branch decide for its releases, a
hold is lifted by its holder or an RM."""

from __future__ import annotations

import pytest

from bot.config.sections import PersonConfig
from bot.domain import authority
from bot.domain.tags import ReleaseTag
from bot.team import Team

TAG = ReleaseTag.parse("3.14.1")
TEAM = Team(
    {
        "hugo": PersonConfig(rm=["3.14"]),
        "ned": PersonConfig(roles=["macos"]),
        "steve": PersonConfig(roles=["windows"]),
        "eve": PersonConfig(),
        "ana": PersonConfig(roles=["docs", "source"]),
    }
)


def test_only_a_holder_of_the_role_says_it_is_ready() -> None:
    assert authority.may_ready(TEAM, "ned", "macos") is None
    refusal = authority.may_ready(TEAM, "steve", "macos")
    assert refusal is not None and "you hold windows" in refusal
    refusal = authority.may_ready(TEAM, "eve", "macos")
    assert refusal is not None and "you hold no role" in refusal
    refusal = authority.may_ready(TEAM, "ana", "macos")
    assert refusal is not None and "you hold docs, source." in refusal


def test_a_claim_is_withdrawn_by_its_role_or_an_rm() -> None:
    assert authority.may_unready(TEAM, "ned", "macos", TAG) is None
    assert authority.may_unready(TEAM, "hugo", "macos", TAG) is None
    assert authority.may_unready(TEAM, "steve", "macos", TAG) is not None


def test_a_hold_is_lifted_by_its_holder_or_an_rm_who_lifts_every_hold() -> None:
    holders = ["ned", "steve"]

    assert authority.holds_lifted(TEAM, "ned", TAG, holders) == ["ned"]
    assert authority.holds_lifted(TEAM, "hugo", TAG, holders) == holders
    assert authority.may_lift_hold(TEAM, "eve", TAG, holders) == (
        "3.14.1 is held by ned, steve; only they or an RM of 3.14 can lift it."
    )


@pytest.mark.parametrize(
    "rule",
    [
        authority.may_publish,
        authority.may_abort,
        authority.may_respin,
        authority.may_waive,
        authority.may_unwaive,
        authority.may_announce,
    ],
)
def test_rm_commands_are_for_the_branchs_rms_only(rule: authority.RmRule) -> None:
    assert rule(TEAM, "hugo", TAG) is None
    refusal = rule(TEAM, "ned", TAG)
    assert refusal is not None and refusal.startswith("Only a release manager of 3.14 (hugo)")
    other = ReleaseTag.parse("3.13.9")
    assert rule(TEAM, "hugo", other) is not None  # an RM of 3.14 only


def test_a_branch_without_an_rm_refuses_every_command() -> None:
    assert authority.unmanaged(TEAM, TAG) is None
    refusal = authority.unmanaged(TEAM, ReleaseTag.parse("3.13.9"))
    assert refusal is not None and "No release manager is configured for 3.13" in refusal
    assert "add the branch to a person's rm list in the config first." in refusal


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (authority.may_publish, "can publish 3.14.1"),
        (authority.may_abort, "can abort the publish of 3.14.1"),
        (authority.may_respin, "can re-spin 3.14.1"),
        (authority.may_waive, "can waive rules for 3.14.1"),
        (authority.may_unwaive, "can undo waivers of 3.14.1"),
        (authority.may_announce, "can read or write the announcement of 3.14.1"),
    ],
)
def test_an_rm_only_refusal_names_the_branch_its_rms_and_what_was_refused(
    rule: object, words: str
) -> None:
    assert callable(rule)
    assert rule(TEAM, "hugo", TAG) is None
    assert rule(TEAM, "ned", TAG) == f"Only a release manager of 3.14 (hugo) {words}."
