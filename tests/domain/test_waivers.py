"""Which role a waived unexpected file belongs to: the role whose staging sub-folder holds it,
else the first role that stages at the top of the release folder."""

from __future__ import annotations

import pytest

from bot.domain.profile import Profile, load_profile
from bot.domain.tags import ReleaseTag
from bot.domain.waivers import (
    Waiver,
    WaiverError,
    owner_of,
    resolve_target,
    waived_paths,
    waived_roles,
)

TAG = ReleaseTag.parse("3.14.1")


@pytest.fixture
def profile() -> Profile:
    return load_profile("cpython")


def test_a_waived_file_in_the_docs_folder_belongs_to_docs(profile: Profile) -> None:
    assert owner_of(profile, TAG, "docs/python-3.14.1-docs-pdf-a4.zip") == "docs"


def test_a_waived_file_at_the_top_belongs_to_the_first_role_staging_there(
    profile: Profile,
) -> None:
    assert owner_of(profile, TAG, "python-3.14.1-README.txt") == "source"


@pytest.mark.parametrize(
    ("word", "sentence"),
    [
        ("/Python-3.14.1.tgz", "is not a path inside 3.14.1's staging folder"),
        ("docs/../../etc/passwd", "is not a path inside 3.14.1's staging folder"),
        ("x" * 301, "is not a path inside 3.14.1's staging folder"),
        ("x" * 300, "is neither a role, a required file of 3.14.1"),  # as long as allowed
    ],
)
def test_a_waiver_target_outside_the_release_is_refused_before_anything_is_looked_up(
    word: str, sentence: str
) -> None:
    with pytest.raises(WaiverError) as refused:
        resolve_target(load_profile("cpython"), TAG, word, {})
    assert sentence in str(refused.value)


def test_with_no_role_staging_at_the_top_a_waived_top_file_belongs_to_the_first_role(
    profile: Profile,
) -> None:
    roles = {
        name: role.model_copy(update={"folder": role.folder or name})
        for name, role in profile.spec.roles.items()
    }
    nested = Profile(profile.spec.model_copy(update={"roles": roles}))
    assert nested.roles_for(TAG)[0] == "source"
    assert owner_of(nested, TAG, "python-3.14.1-README.txt") == "source"
    assert owner_of(nested, TAG, "windows/python-3.14.1-README.txt") == "windows"


def test_a_waived_top_file_belongs_to_the_first_role_staging_at_the_top_not_the_first_role(
    profile: Profile,
) -> None:
    roles = dict(profile.spec.roles)
    roles["source"] = roles["source"].model_copy(update={"folder": "src"})
    moved = Profile(profile.spec.model_copy(update={"roles": roles}))
    assert moved.roles_for(TAG)[:3] == ("source", "docs", "windows")
    assert owner_of(moved, TAG, "python-3.14.1-README.txt") == "windows"


def test_a_role_waiver_does_not_waive_a_file_named_like_the_role() -> None:
    waivers = [Waiver("windows", True, "hugo"), Waiver("notes.txt", False, "hugo")]

    assert waived_paths(waivers) == {"notes.txt"}
    assert set(waived_roles(waivers)) == {"windows"}


def test_a_waiver_names_its_target_who_waived_it_and_why() -> None:
    waiver = Waiver("python-3.14.1-arm64.exe", False, "hugo", "the ARM64 build broke")
    assert waiver.describe() == "python-3.14.1-arm64.exe (waived by hugo: the ARM64 build broke)"


def test_a_waiver_without_a_reason_names_only_its_target_and_who_waived_it() -> None:
    assert Waiver("macos", True, "hugo").describe() == "macos (waived by hugo)"
