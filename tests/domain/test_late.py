"""Late files of a published release: what is already public, seen as the staging paths it
came from, and the sentence that tells the channel what was added."""

from __future__ import annotations

import pytest

from bot.domain.files import StagedFile
from bot.domain.late import announcement, as_staged
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import Profile, load_profile
from bot.domain.tags import ReleaseTag

TAG = ReleaseTag.parse("3.14.1")
T0 = 1_800_000_000.0


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile("cpython")


def late_plan(*targets: str) -> PublishPlan:
    return PublishPlan(
        TAG, tuple(PlanFile(t.rsplit("/", 1)[-1], t, "windows", 1, "0" * 64) for t in targets)
    )


def test_public_files_are_seen_at_their_staging_paths_with_their_size_time_and_kind(
    profile: Profile,
) -> None:
    public = {
        "3.14.1/Python-3.14.1.tgz": StagedFile("3.14.1/Python-3.14.1.tgz", 10, T0),
        "doc/3.14.1/python-3.14.1-docs.epub": StagedFile(
            "doc/3.14.1/python-3.14.1-docs.epub", 20, T0 + 1
        ),
        "3.14.1/amd64/core.msi": StagedFile("3.14.1/amd64/core.msi", 30, T0 + 2, regular=False),
        "3.13.9/Python-3.13.9.tgz": StagedFile("3.13.9/Python-3.13.9.tgz", 40, T0),
    }
    assert as_staged(profile, TAG, public) == {
        "Python-3.14.1.tgz": StagedFile("Python-3.14.1.tgz", 10, T0),
        "docs/python-3.14.1-docs.epub": StagedFile("docs/python-3.14.1-docs.epub", 20, T0 + 1),
        "amd64/core.msi": StagedFile("amd64/core.msi", 30, T0 + 2, regular=False),
    }


def test_late_files_are_named_by_their_file_names_and_counted_in_the_plural() -> None:
    plan = late_plan("3.14.1/python-3.14.1-macos11.pkg", "doc/3.14.1/python-3.14.1-docs.epub")
    text = announcement(plan, "hugo", {})
    assert text == (
        "3.14.1 has 2 files added: python-3.14.1-macos11.pkg, python-3.14.1-docs.epub; "
        "confirmed by hugo."
    )


def test_one_late_file_is_counted_in_the_singular() -> None:
    text = announcement(late_plan("3.14.1/python-3.14.1-macos11.pkg"), "hugo", {})
    assert "3.14.1 has 1 file added: python-3.14.1-macos11.pkg;" in text


def test_ten_late_files_are_all_named() -> None:
    plan = late_plan(*(f"3.14.1/amd64/part{i}.msi" for i in range(1, 11)))
    text = announcement(plan, "hugo", {})
    assert "has 10 files added: part1.msi, part2.msi," in text
    assert "part10.msi; confirmed by hugo." in text
    assert "more" not in text


def test_past_ten_late_files_the_rest_are_counted_not_named() -> None:
    plan = late_plan(*(f"3.14.1/amd64/part{i}.msi" for i in range(1, 12)))
    text = announcement(plan, "hugo", {})
    assert "has 11 files added: part1.msi," in text
    assert "part10.msi and 1 more; confirmed by hugo." in text
    assert "part11.msi" not in text


def test_the_announcement_of_late_files_ends_with_where_to_find_them() -> None:
    links = {"release page": "https://rel.example/", "files": "https://files.example/"}
    text = announcement(late_plan("3.14.1/python-3.14.1-macos11.pkg"), "hugo", links)
    assert text.endswith(
        "confirmed by hugo. Release page: https://rel.example/ Files: https://files.example/"
    )
