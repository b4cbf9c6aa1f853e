"""Which role a waived unexpected file belongs to: the role whose staging sub-folder holds it,
else the first role that stages at the top of the release folder."""

from __future__ import annotations

import pytest

from bot.domain.profile import Profile, load_profile
from bot.domain.tags import ReleaseTag
from bot.domain.waivers import owner_of

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
