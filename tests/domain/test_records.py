"""The python.org record rules, without python.org: which file becomes which record, the
consistency python.org demands, and the create-before-delete order of the writes."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import Profile, load_profile
from bot.domain.records import (
    Create,
    Delete,
    FileRule,
    PydotorgSettings,
    Record,
    differs,
    make_slug,
    planned_records,
    schedule,
    slug_for,
)
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RegistryError

SIDECARS = ("gpg_signature_file", "sigstore_bundle_file")


@pytest.fixture
def profile() -> Profile:
    return load_profile("cpython")


def plan_of(profile: Profile, text: str, *paths: tuple[str, str]) -> PublishPlan:
    """A plan of (role, path) files, each at its public target."""
    tag = ReleaseTag.parse(text)
    files = tuple(
        PlanFile(path, profile.public_target(tag, role, path), role, 1000 + len(path), sha(path))
        for role, path in paths
    )
    return PublishPlan(tag, files)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def settings_with(profile: Profile, **changes: Any) -> PydotorgSettings:
    return PydotorgSettings.model_validate({**profile.spec.pydotorg, **changes})


def record(url: str, slug: str, *, os: str = "/api/v1/downloads/os/1/", **more: Any) -> Record:
    return {"url": url, "slug": slug, "os": os, "download_button": False, "name": slug, **more}


def test_slugs_follow_add_to_pydotorg() -> None:
    assert slug_for(ReleaseTag.parse("3.14.0rc2")) == "3140-rc2"
    assert slug_for(ReleaseTag.parse("3.13.9")) == "3139"
    assert make_slug("Windows installer (64-bit)") == "Windows-installer-64-bit"


def test_a_source_tarball_becomes_the_source_download_button(profile: Profile) -> None:
    settings = PydotorgSettings.from_profile(profile)
    plan = plan_of(
        profile,
        "3.14.1",
        ("source", "Python-3.14.1.tar.xz"),
        ("source", "Python-3.14.1.tar.xz.sigstore"),
    )
    (only,) = planned_records(settings, profile, plan)
    assert only.target == "3.14.1/Python-3.14.1.tar.xz"
    assert only.url == "https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tar.xz"
    assert only.slug == "3141-XZ-compressed-source-tarball"
    assert (only.os, only.is_source, only.download_button) == ("source", True, True)
    assert only.sidecars == (("sigstore_bundle_file", only.url + ".sigstore"),)
    assert only.sha256_sum == sha("Python-3.14.1.tar.xz")


def test_files_no_rule_matches_and_other_folders_get_no_record(profile: Profile) -> None:
    settings = PydotorgSettings.from_profile(profile)
    plan = plan_of(
        profile,
        "3.14.1",
        ("source", "Python-3.14.1.tgz"),
        ("source", "README.txt"),  # no rule
        ("docs", "python-3.14.1-docs.epub"),  # the docs folder
        ("source", "Python-3.13.9.tgz"),  # another release's name
    )
    assert [r.target for r in planned_records(settings, profile, plan)] == [
        "3.14.1/Python-3.14.1.tgz"
    ]


def test_a_description_since_a_branch_applies_from_that_branch(profile: Profile) -> None:
    settings = PydotorgSettings.from_profile(profile)
    rule = settings.rule_for(ReleaseTag.parse("3.14.1"), "python-3.14.1-macos11.pkg")
    assert rule is not None
    assert rule.description_for(ReleaseTag.parse("3.14.1")) == "for macOS 10.15 and later"
    assert rule.description_for(ReleaseTag.parse("3.13.9")) == "for macOS 10.13 and later"


def test_the_newest_description_since_is_the_highest_branch_not_the_last_in_text_order() -> None:
    rule = FileRule(
        match="pkg",
        name="macOS installer",
        os="macos",
        description="for every macOS",
        description_since={"3.9": "for macOS 10.9 and later", "3.10": "for macOS 10.13 and later"},
    )
    assert rule.description_for(ReleaseTag.parse("3.14.1")) == "for macOS 10.13 and later"
    assert rule.description_for(ReleaseTag.parse("3.9.5")) == "for macOS 10.9 and later"
    assert rule.description_for(ReleaseTag.parse("3.8.1")) == "for every macOS"


def test_a_file_in_a_sub_folder_of_the_release_folder_gets_no_record(profile: Profile) -> None:
    # An MSI folder (amd64/) is published beside the installers but never registered, even
    # when a rule matches its files' names.
    rules = [{"match": r"\.msi$", "name": "Windows MSI", "os": "windows"}]
    plan = plan_of(profile, "3.14.1", ("windows", "amd64/core.msi"), ("windows", "launcher.msi"))
    settings = settings_with(profile, names="", rules=rules)
    assert [r.target for r in planned_records(settings, profile, plan)] == ["3.14.1/launcher.msi"]


def test_a_long_record_name_is_cut_to_40_characters_in_the_slug(profile: Profile) -> None:
    name = "Windows embeddable package for the ARM64 platform (experimental)"
    rules = [{"match": r"-embed-arm64\.zip$", "name": name, "os": "windows"}]
    plan = plan_of(profile, "3.14.1", ("windows", "python-3.14.1-embed-arm64.zip"))
    (only,) = planned_records(settings_with(profile, rules=rules), profile, plan)
    assert only.slug == "3141-Windows-embeddable-package-for-the-ARM64"
    assert only.name == name


def test_two_download_buttons_for_one_os_are_refused(profile: Profile) -> None:
    rules = [
        {"match": r"\.tgz$", "name": "Gzipped", "os": "source", "download_button": True},
        {"match": r"\.tar\.xz$", "name": "XZ", "os": "source", "download_button": True},
    ]
    plan = plan_of(
        profile, "3.14.1", ("source", "Python-3.14.1.tgz"), ("source", "Python-3.14.1.tar.xz")
    )
    with pytest.raises(RegistryError, match="both be the download button of OS 'source'"):
        planned_records(settings_with(profile, rules=rules), profile, plan)


def test_two_files_with_one_slug_are_refused(profile: Profile) -> None:
    rules = [{"match": r"\.t", "name": "Source", "os": "source"}]
    plan = plan_of(
        profile, "3.14.1", ("source", "Python-3.14.1.tgz"), ("source", "Python-3.14.1.tar.xz")
    )
    with pytest.raises(RegistryError, match=r"same python\.org slug '3141-Source'") as refused:
        planned_records(settings_with(profile, rules=rules), profile, plan)
    assert "3.14.1/Python-3.14.1.tgz and 3.14.1/Python-3.14.1.tar.xz" in str(refused.value)


def test_a_rule_that_is_not_a_regex_is_a_config_error(profile: Profile) -> None:
    spec = {**profile.spec.pydotorg, "rules": [{"match": "(", "name": "x", "os": "source"}]}
    broken = Profile(profile.spec.model_copy(update={"pydotorg": spec}))
    with pytest.raises(ConfigError, match=r"pydotorg\.rules\.0\.match"):
        PydotorgSettings.from_profile(broken)


def test_matching_records_are_left_alone() -> None:
    have = [
        record(
            "u/a",
            "a",
            resource_uri="/api/v1/downloads/release_file/1/",
            filesize=10,
            release="https://www.python.org/api/v1/downloads/release/5/",
        )
    ]
    want = {
        "u/a": record(
            "u/a",
            "a",
            os="https://www.python.org/api/v1/downloads/os/1/",
            release="/api/v1/downloads/release/5/",
        )
    }
    want["u/a"]["filesize"] = "10"  # listed as a number, posted as whatever: equal
    assert schedule(have, want, SIDECARS) == ([], 1)


def test_a_record_moved_to_another_os_is_replaced() -> None:
    old = record("u/a", "a", os="https://www.python.org/api/v1/downloads/os/1/")
    new = record("u/a", "a", os="/api/v1/downloads/os/2/")
    steps, unchanged = schedule([old], {"u/a": new}, SIDECARS)
    assert steps == [Delete(old, replaced=True), Create(new, replaces=True)]
    assert unchanged == 0


def test_a_field_the_server_does_not_list_does_not_hide_a_change_in_the_next() -> None:
    have = record("u/a", "a", sha256_sum="1")  # listed without a description
    changed = record("u/a", "a", description="Recommended", sha256_sum="2")
    same = record("u/a", "a", description="Recommended", sha256_sum="1")
    assert differs(have, changed, SIDECARS)
    assert not differs(have, same, SIDECARS)


def test_a_record_renamed_at_its_url_is_deleted_right_before_its_replacement() -> None:
    # python.org's URLs are unique: the renamed record (a new slug) cannot be created while
    # the old one holds its URL.
    old = record("u/a", "3141-Windows-installer-64-bit")
    new = record("u/a", "3141-Windows-installer-AMD64")
    steps, _ = schedule([old], {"u/a": new}, SIDECARS)
    assert steps == [Delete(old, replaced=True), Create(new, replaces=True)]


def test_new_records_come_before_deletions() -> None:
    stale = record("u/old", "old")
    steps, unchanged = schedule([stale], {"u/new": record("u/new", "new")}, SIDECARS)
    assert steps == [Create(record("u/new", "new"), replaces=False), Delete(stale, False)]
    assert unchanged == 0


def test_a_changed_record_is_deleted_right_before_its_replacement() -> None:
    old = record("u/a", "a", sha256_sum="1")
    new = record("u/a", "a", sha256_sum="2")
    other = record("u/b", "b")
    steps, _ = schedule([old], {"u/b": other, "u/a": new}, SIDECARS)
    assert steps == [
        Create(other, replaces=False),
        Delete(old, replaced=True),
        Create(new, replaces=True),
    ]


def test_a_download_button_moves_by_deleting_the_old_holder_first() -> None:
    old = record("u/old", "old", download_button=True)
    new = record("u/new", "new", download_button=True)
    steps, _ = schedule([old], {"u/new": new}, SIDECARS)
    assert steps == [Delete(old, replaced=False), Create(new, replaces=False)]


def test_a_sidecar_the_plan_no_longer_has_must_be_blank() -> None:
    have = record("u/a", "a", gpg_signature_file="u/a.asc")
    assert differs(have, record("u/a", "a"), SIDECARS)
    assert not differs(record("u/a", "a", gpg_signature_file=""), record("u/a", "a"), SIDECARS)


def test_a_stale_record_holding_the_new_records_slug_is_deleted_before_it_is_created() -> None:
    # python.org's slugs are unique: the new record cannot exist beside the old one even
    # though their URLs differ (a file renamed, same name in python.org's listing).
    old = record("u/old", "3141-Windows-installer-64-bit")
    new = record("u/new", "3141-Windows-installer-64-bit")
    steps, _ = schedule([old], {"u/new": new}, SIDECARS)
    assert steps == [Delete(old, replaced=False), Create(new, replaces=False)]


def test_a_record_without_a_download_button_is_created_before_the_old_holder_goes() -> None:
    # Only a second button of one OS collides: a plain file of that OS is created first, so
    # the release's download button stays until the stale record is deleted last.
    old = record("u/old", "old", download_button=True)
    new = record("u/new", "new", download_button=False)
    steps, _ = schedule([old], {"u/new": new}, SIDECARS)
    assert steps == [Create(new, replaces=False), Delete(old, replaced=False)]
