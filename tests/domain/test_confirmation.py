"""When a confirmation code is valid: issued for this plan, to this RM, not yet expired."""

from __future__ import annotations

from bot.domain.confirmation import CodeFault, CodeProblem, check_code, hash_code, login_refusal
from bot.domain.history import Offer
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag

TAG = ReleaseTag.parse("3.14.1")
NOW = 1_800_000_000.0
OFFER = Offer("hugo", hash_code("K7Q2XFAB"), NOW + 600, PublishPlan(TAG, ()))


def test_the_code_issued_to_the_rm_is_valid_until_it_expires() -> None:
    assert check_code(OFFER, {}, hash_code("K7Q2XFAB"), "hugo", NOW) is None
    assert check_code(OFFER, {}, hash_code("K7Q2XFAB"), "hugo", NOW + 600) is None


def test_an_expired_code_is_refused_with_its_expiry() -> None:
    problem = check_code(OFFER, {}, hash_code("K7Q2XFAB"), "hugo", NOW + 601)

    assert problem == CodeProblem(CodeFault.EXPIRED, expired_at=NOW + 600)


def test_another_rm_cannot_use_a_code_issued_to_someone_else() -> None:
    problem = check_code(OFFER, {}, hash_code("K7Q2XFAB"), "thomas", NOW)

    assert problem == CodeProblem(CodeFault.NOT_YOURS, holder="hugo")


def test_a_spent_code_says_what_spent_it() -> None:
    spent = {hash_code("OLDCODE1"): "replaced by a newer plan"}

    problem = check_code(OFFER, spent, hash_code("OLDCODE1"), "hugo", NOW)

    assert problem == CodeProblem(CodeFault.SPENT, why="replaced by a newer plan")


def test_a_code_never_issued_is_unknown_with_or_without_an_offer() -> None:
    assert check_code(OFFER, {}, hash_code("WRONG123"), "hugo", NOW) == CodeProblem(
        CodeFault.UNKNOWN
    )
    assert check_code(None, {}, hash_code("K7Q2XFAB"), "hugo", NOW) == CodeProblem(
        CodeFault.UNKNOWN
    )


def test_codes_are_compared_hashed_never_stored_in_clear() -> None:
    assert hash_code("K7Q2XFAB") != "K7Q2XFAB"
    assert len(hash_code("K7Q2XFAB")) == 64


def test_one_signed_file_is_named_in_the_singular() -> None:
    refusal = login_refusal("3.14.1", 1, None)

    assert refusal is not None and "This plan signs 1 file at the confirmation" in refusal


def test_two_signed_files_are_named_in_the_plural() -> None:
    refusal = login_refusal("3.14.1", 2, None)

    assert refusal is not None and "This plan signs 2 files at the confirmation" in refusal


def test_a_plan_that_signs_nothing_takes_the_code_alone() -> None:
    refusal = login_refusal("3.14.1", 0, "abcd.login-code")

    assert refusal is not None and "type /publish 3.14.1 confirm <code> alone." in refusal
    assert login_refusal("3.14.1", 0, None) is None
    assert login_refusal("3.14.1", 2, "abcd.login-code") is None
