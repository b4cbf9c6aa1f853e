"""Profile rules: statuses (and pinned ones), alternative names, signatures, sidecars, indexes
and the errors a profile author reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.domain.profile import FileKind, Profile, ProfileSpec, SidecarRule, load_profile
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError

SPEC: dict[str, Any] = {  # a profile as its TOML reads: any JSON-like value
    "name": "widget",
    "indexes": ["index-*.json"],
    "signatures_since": "3.14",
    "roles": {
        "source": {
            "required": [
                {"name": "Python-{version}.tgz"},
                {"name": "NOTES-{version}.txt", "signed": False},
                {"name": "Python-{version}-full.tgz", "unless_status": ["security"]},
            ]
        },
        "windows": {"unless_status": ["security"], "required": [{"name": "python-{tag}.exe"}]},
        "macos": {
            "folder": "mac",
            "required": [
                {
                    "name": "python-{version}-macos11.pkg",
                    "match": "python-{version}-macos1[1-9].pkg",
                }
            ],
        },
    },
}
SECURITY = {"3.12": "security"}


def tag(text: str) -> ReleaseTag:
    return ReleaseTag.parse(text)


def widget(**changes: object) -> Profile:
    return Profile(ProfileSpec.model_validate({**SPEC, **changes}))


def required(profile: Profile, version: str, present: tuple[str, ...] = ()) -> set[str]:
    return {f.path for f in profile.expected(tag(version), present)}


def test_a_file_not_made_in_a_security_release_is_not_required_of_one() -> None:
    assert "Python-3.12.9-full.tgz" not in required(widget().with_statuses(SECURITY), "3.12.9")
    assert "Python-3.12.9-full.tgz" in required(widget(), "3.12.9")


def test_a_published_release_keeps_the_roles_of_the_status_it_was_published_under() -> None:
    pinned = widget().with_statuses(SECURITY).with_pinned({"3.12.2": "bugfix"})
    assert "windows" in pinned.roles_for(tag("3.12.2"))
    assert "Python-3.12.2-full.tgz" in required(pinned, "3.12.2")


def test_pinning_one_release_leaves_the_others_to_the_release_cycle() -> None:
    pinned = widget().with_statuses(SECURITY).with_pinned({"3.12.2": "bugfix"})
    assert "windows" not in pinned.roles_for(tag("3.12.9"))


def test_learning_the_statuses_keeps_the_pinned_releases() -> None:
    pinned = widget().with_pinned({"3.12.2": "bugfix"}).with_statuses(SECURITY)
    assert "windows" in pinned.roles_for(tag("3.12.2"))


def test_a_required_file_may_arrive_under_its_alternative_name_in_its_folder() -> None:
    profile = widget()
    staged = "mac/python-3.14.2-macos12.pkg"
    assert staged in required(profile, "3.14.2", (staged,))
    assert "mac/python-3.14.2-macos11.pkg" not in required(profile, "3.14.2", (staged,))
    kind = profile.classify(tag("3.14.2"), staged)
    assert (kind.kind, kind.role) == (FileKind.REQUIRED, "macos")


def test_a_required_file_under_its_alternative_name_needs_a_signature() -> None:
    assert widget().needs_signature(tag("3.14.2"), "mac/python-3.14.2-macos12.pkg")


def test_a_file_marked_unsigned_needs_no_signature_in_a_signed_role() -> None:
    profile = widget()
    assert not profile.needs_signature(tag("3.14.2"), "NOTES-3.14.2.txt")
    assert profile.needs_signature(tag("3.14.2"), "Python-3.14.2.tgz")


def test_a_file_that_is_not_required_needs_no_signature() -> None:
    assert not widget().needs_signature(tag("3.14.2"), "README.txt")


def test_signatures_are_required_from_the_profiles_branch_on() -> None:
    profile = widget()
    assert profile.requires_signatures(tag("3.14.0"))
    assert profile.requires_signatures(tag("3.15.0a1"))
    assert not profile.requires_signatures(tag("3.13.9"))


def test_a_profile_without_signatures_since_requires_none() -> None:
    assert not widget(signatures_since=None).requires_signatures(tag("3.14.0"))


def test_a_sidecar_rule_with_until_stops_after_that_branch() -> None:
    rule = SidecarRule(suffix=".asc", until="3.13")
    assert rule.applies_to(tag("3.13.9"))
    assert not rule.applies_to(tag("3.14.0"))


def test_an_index_is_recognised_however_deep_its_folder() -> None:
    assert widget().is_index("windows/amd64/index-windows.json")
    assert not widget().is_index("index-windows/notes.txt")


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "widget.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_bad_branch_is_refused_saying_what_a_branch_looks_like(tmp_path: Path) -> None:
    text = 'name = "w"\n[roles.a]\nrequired = [{ name = "x", since = "two" }]\n'
    with pytest.raises(ConfigError, match=r"'two' is not a branch like 3\.14 or a version"):
        load_profile(write(tmp_path, text))


def test_a_profile_that_is_not_toml_is_refused_saying_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"widget\.toml: not valid TOML"):
        load_profile(write(tmp_path, "name = \n"))


def test_a_profile_nested_too_deeply_is_refused_saying_so(tmp_path: Path) -> None:
    text = "name = " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ConfigError, match=r"widget\.toml: its values are nested too deeply"):
        load_profile(write(tmp_path, text))


def test_an_unknown_profile_is_refused_naming_the_built_in_ones_as_they_are_typed(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"\(built-in: cpython\)"):
        load_profile("cpyhton", base=tmp_path)


def test_a_required_file_under_its_alternative_name_keeps_its_rule() -> None:
    mac = {
        "name": "python-{version}-macos11.pkg",
        "match": "python-{version}-macos1[1-9].pkg",
        "signed": False,
    }
    profile = widget(roles={**SPEC["roles"], "macos": {"folder": "mac", "required": [mac]}})
    staged = "mac/python-3.14.2-macos12.pkg"
    [file] = [f for f in profile.expected(tag("3.14.2"), (staged,)) if f.role == "macos"]
    assert (file.path, file.pattern) == (staged, "mac/python-3.14.2-macos1[1-9].pkg")
    assert not profile.needs_signature(tag("3.14.2"), staged)


def test_a_file_allowed_unless_a_status_is_unexpected_in_a_release_of_that_status() -> None:
    source = {**SPEC["roles"]["source"]}
    source["allowed"] = [{"name": "Python-{version}.tar.xz", "unless_status": ["security"]}]
    profile = widget(roles={**SPEC["roles"], "source": source})
    path = "Python-3.12.9.tar.xz"
    assert profile.classify(tag("3.12.9"), path).kind is FileKind.ALLOWED
    security = profile.with_statuses(SECURITY)
    assert security.classify(tag("3.12.9"), path).kind is FileKind.UNEXPECTED


def test_an_unknown_profile_given_without_a_config_folder_is_refused() -> None:
    with pytest.raises(ConfigError, match="'cpyhton' is neither a built-in profile nor a file"):
        load_profile("cpyhton")


def test_a_profile_that_cannot_be_read_is_refused_with_the_reason() -> None:
    # A regular file that no read succeeds on, even as root: the kernel answers EIO.
    with pytest.raises(ConfigError, match=r"^profile /proc/self/mem: cannot read it \(Input"):
        load_profile("/proc/self/mem")


def test_a_profile_is_read_as_utf8_whatever_the_machine_s_locale(
    tmp_path: Path, ascii_locale: None
) -> None:
    text = 'name = "wïdget"\n[roles.a]\nrequired = [{ name = "x" }]\n'
    assert load_profile(write(tmp_path, text)).name == "wïdget"


def test_a_file_named_only_like_a_sidecar_is_unexpected_in_a_profile_allowing_nothing() -> None:
    # A hostile upload named ".sigstore" is a sidecar of the empty name, which no rule allows.
    profile = widget(sidecars=[{"suffix": ".sigstore"}])
    assert profile.classify(tag("3.14.2"), ".sigstore").kind is FileKind.UNEXPECTED
