"""Signature rules: the line a release manager runs to sign, whether a release needs
signatures, and what ``relbot check`` says when the config turns them off."""

from __future__ import annotations

import pytest

from bot.domain.profile import Profile, load_profile
from bot.domain.signing import opt_out_warning, sign_command, signatures_required
from bot.domain.tags import ReleaseTag


@pytest.fixture(scope="module")
def cpython() -> Profile:
    return load_profile("cpython")  # signatures from 3.10 on


@pytest.fixture(scope="module")
def unsigned_profile(cpython: Profile) -> Profile:
    return Profile(cpython.spec.model_copy(update={"name": "plain", "signatures_since": None}))


def test_the_sign_command_without_a_config_file_names_only_the_tag() -> None:
    assert sign_command(ReleaseTag.parse("3.14.0"), None) == "relbot sign 3.14.0"


def test_the_sign_command_names_the_config_file_quoted_for_the_shell() -> None:
    line = sign_command(ReleaseTag.parse("3.14.0"), "/etc/relbot/my config.toml")
    assert line == "relbot sign 3.14.0 --config '/etc/relbot/my config.toml'"


def test_without_a_config_setting_the_profile_decides_which_releases_need_signatures(
    cpython: Profile,
) -> None:
    assert signatures_required(None, cpython, ReleaseTag.parse("3.14.0")) is True
    assert signatures_required(None, cpython, ReleaseTag.parse("3.9.1")) is False


def test_the_config_setting_overrides_the_profile_either_way(cpython: Profile) -> None:
    assert signatures_required(False, cpython, ReleaseTag.parse("3.14.0")) is False
    assert signatures_required(True, cpython, ReleaseTag.parse("3.9.1")) is True


@pytest.mark.parametrize("require", [None, True])
def test_check_warns_of_nothing_unless_the_config_turns_signatures_off(
    cpython: Profile, require: bool | None
) -> None:
    assert opt_out_warning(require, cpython) is None


def test_the_opt_out_warning_names_the_release_the_profile_wants_signed_from(
    cpython: Profile,
) -> None:
    warning = opt_out_warning(False, cpython)
    assert warning is not None
    assert (
        "published without Sigstore signatures (the cpython profile requires them from 3.10 on);"
        in warning
    )
    assert "remove the line to sign" in warning


def test_the_opt_out_warning_of_a_profile_without_signatures_names_no_release(
    unsigned_profile: Profile,
) -> None:
    warning = opt_out_warning(False, unsigned_profile)
    assert warning is not None
    assert "published without Sigstore signatures; remove the line to sign" in warning
    assert "requires" not in warning
