"""The cpython profile's expected files for every kind of release, table-driven, with branch
statuses from a pinned copy of the release cycle (never the network)."""

from __future__ import annotations

import pytest

from bot.domain.profile import Classification, FileKind, Profile, load_profile
from bot.domain.release_cycle import parse_release_cycle
from bot.domain.tags import ReleaseTag
from tests.pinned import RELEASE_CYCLE

DOCS = [
    "docs/python-{v}-docs.epub",
    "docs/python-{v}-docs-html.tar.bz2",
    "docs/python-{v}-docs-html.zip",
    "docs/python-{v}-docs-texinfo.tar.bz2",
    "docs/python-{v}-docs-texinfo.zip",
    "docs/python-{v}-docs-text.tar.bz2",
    "docs/python-{v}-docs-text.zip",
]
SOURCE = ["Python-{v}.tgz", "Python-{v}.tar.xz"]
ANDROID = ["python-{v}-aarch64-linux-android.tar.gz", "python-{v}-x86_64-linux-android.tar.gz"]
IOS = ["python-{v}-iOS-XCframework.tar.gz"]
EXE = [
    "python-{v}.exe",
    "python-{v}-amd64.exe",
    "python-{v}-arm64.exe",
    "python-{v}-embed-win32.zip",
    "python-{v}-embed-amd64.zip",
    "python-{v}-embed-arm64.zip",
]
MANIFEST = ["windows-{v}.json"]
PYMANAGER = ["python-{v}-amd64.zip", "python-{v}-arm64.zip", "python-{v}-win32.zip"]
PKG = ["python-{v}-macos11.pkg"]
SECURITY = dict(source=SOURCE, docs=DOCS)
BUGFIX_13 = dict(source=SOURCE, docs=DOCS, windows=EXE + MANIFEST, macos=PKG)
BUGFIX_14 = dict(source=SOURCE + ANDROID, docs=DOCS, windows=EXE + MANIFEST, macos=PKG)
BETA_14 = dict(source=SOURCE + ANDROID, windows=EXE + MANIFEST, macos=PKG)
BETA_15 = dict(source=SOURCE + ANDROID + IOS, windows=EXE + MANIFEST, macos=PKG)
FINAL_15 = dict(BETA_15, docs=DOCS)
ALPHA_16 = dict(source=SOURCE + ANDROID + IOS, windows=MANIFEST + PYMANAGER, macos=PKG)


@pytest.fixture(scope="module")
def pinned() -> Profile:
    cycle = parse_release_cycle(RELEASE_CYCLE.read_bytes(), str(RELEASE_CYCLE))
    return load_profile("cpython").with_statuses(cycle.statuses())


def manifest(profile: Profile, tag: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for expected in profile.expected(ReleaseTag.parse(tag)):
        found.setdefault(expected.role, set()).add(expected.path)
    return found


def fill(tag: str, **roles: list[str]) -> dict[str, set[str]]:
    return {role: {name.format(v=tag) for name in names} for role, names in roles.items()}


CASES = [
    # (tag, status the pinned cycle gives its branch, the table's files)
    ("3.12.13", "security", SECURITY),
    ("3.11.15", "security", SECURITY),
    ("3.10.20", "end-of-life", SECURITY),
    ("3.13.11", "security", SECURITY),
    ("3.14.2", "bugfix", BUGFIX_14),
    ("3.14.3rc1", "bugfix", BUGFIX_14),
    ("3.15.0b2", "bugfix", BETA_15),
    ("3.15.1", "bugfix", FINAL_15),
    ("3.16.0a1", "feature", ALPHA_16),
]


@pytest.mark.parametrize(("tag", "status", "roles"), CASES, ids=[c[0] for c in CASES])
def test_the_manifest_of_each_kind_of_release_follows_the_table(
    pinned: Profile, tag: str, status: str, roles: dict[str, list[str]]
) -> None:
    assert pinned.status(ReleaseTag.parse(tag)) == status
    assert manifest(pinned, tag) == fill(tag, **roles)


# Kinds the pinned cycle no longer has: the same profile with other statuses.
OTHER_TIMES = [
    ("3.13.9", {"3.13": "bugfix"}, BUGFIX_13),
    ("3.14.0b3", {"3.14": "prerelease"}, BETA_14),
    ("3.14.0rc2", {"3.14": "prerelease"}, BUGFIX_14),
    ("3.15.0b2", {"3.15": "prerelease"}, BETA_15),
    ("3.16.0a1", {"3.16": "feature"}, ALPHA_16),
    ("3.12.12", {"3.12": "security"}, SECURITY),
    ("3.9.25", {"3.9": "end-of-life"}, SECURITY),
]


@pytest.mark.parametrize(
    ("tag", "statuses", "roles"), OTHER_TIMES, ids=[f"{c[0]}-{c[1]}" for c in OTHER_TIMES]
)
def test_the_manifest_follows_the_branch_status(
    tag: str, statuses: dict[str, str], roles: dict[str, list[str]]
) -> None:
    profile = load_profile("cpython").with_statuses(statuses)

    assert manifest(profile, tag) == fill(tag, **roles)


def test_a_security_prerelease_has_no_docs_and_only_source() -> None:
    profile = load_profile("cpython").with_statuses({"3.12": "security"})

    assert manifest(profile, "3.12.0rc9") == fill("3.12.0rc9", source=SOURCE, docs=DOCS)
    assert profile.roles_for(ReleaseTag.parse("3.12.0b1")) == ("source",)


def test_a_branch_the_cycle_does_not_list_gets_every_binary(pinned: Profile) -> None:
    tag = ReleaseTag.parse("3.17.0a1")
    assert pinned.status(tag) is None
    assert set(manifest(pinned, "3.17.0a1")) == {"source", "windows", "macos"}


def kind(profile: Profile, tag: str, path: str) -> Classification:
    return profile.classify(ReleaseTag.parse(tag), path)


@pytest.mark.parametrize(
    ("tag", "path"),
    [
        ("3.12.13", "python-3.12.13-amd64.exe"),  # security: no Windows
        ("3.12.13", "python-3.12.13-macos11.pkg"),  # security: no macOS
        ("3.12.13", "amd64/core.msi"),
        ("3.13.11", "windows-3.13.11.json"),
        ("3.10.20", "Python-3.10.20.tgz.spdx.json"),  # no SBOM before 3.12.2
        ("3.12.1", "Python-3.12.1.tgz.spdx.json"),
        ("3.14.2", "Python-3.14.2.tgz.asc"),  # no GPG from 3.14
        ("3.16.0a1", "python-3.16.0a1.exe"),  # 3.16: the install manager only
        ("3.16.0a1", "python-3.16.0a1-embed-amd64.zip"),
        ("3.16.0a1", "amd64a1/core.msi"),
        ("3.15.0b2", "Python-3.15.0b2-iOS-XCframework.tar.gz"),  # the name is lowercase
        ("3.14.2", "python-3.14.2-iOS-XCframework.tar.gz"),  # iOS from 3.15
    ],
)
def test_files_the_table_rules_out_are_unexpected(pinned: Profile, tag: str, path: str) -> None:
    assert kind(pinned, tag, path).kind is FileKind.UNEXPECTED


@pytest.mark.parametrize(
    ("tag", "path", "role"),
    [
        ("3.12.13", "Python-3.12.13.tgz.spdx.json", "source"),
        ("3.12.2", "Python-3.12.2.tar.xz.spdx.json", "source"),
        ("3.12.13", "Python-3.12.13.tgz.asc", "source"),
        ("3.12.13", "docs/python-3.12.13-docs-html.tar.xz", "docs"),
        ("3.14.2", "amd64/core.msi", "windows"),
        ("3.15.0b2", "arm64b2/core.msi", "windows"),
        ("3.14.2", "python-3.14.2-amd64.zip", "windows"),
        ("3.14.2", "python-3.14.2t-amd64.zip", "windows"),
        ("3.14.2", "python-3.14.2-test-arm64.zip", "windows"),
        ("3.16.0a1", "python-3.16.0a1-embeddable-amd64.zip", "windows"),
        ("3.14.2", "python-3.14.2-amd64.exe.sig", "windows"),
        ("3.14.2", "python-3.14.2-amd64.exe.crt", "windows"),
        ("3.14.2", "python-3.14.2-macos12.pkg", "macos"),
    ],
)
def test_files_the_table_allows_belong_to_their_role(
    pinned: Profile, tag: str, path: str, role: str
) -> None:
    found = kind(pinned, tag, path)
    assert found.kind is not FileKind.UNEXPECTED and found.role == role


def test_the_pkg_may_be_built_on_another_macos(pinned: Profile) -> None:
    tag = ReleaseTag.parse("3.14.2")
    (pkg,) = (f for f in pinned.expected(tag, {"python-3.14.2-macos13.pkg"}) if f.role == "macos")
    assert pkg.path == "python-3.14.2-macos13.pkg"
    assert kind(pinned, "3.14.2", "python-3.14.2-macos10.pkg").kind is FileKind.UNEXPECTED


@pytest.mark.parametrize(
    ("tag", "path", "signed"),
    [
        ("3.14.2", "Python-3.14.2.tgz", True),
        ("3.14.2", "python-3.14.2-amd64.exe", True),
        ("3.14.2", "windows-3.14.2.json", True),
        ("3.14.2", "python-3.14.2-macos11.pkg", True),
        ("3.15.0b2", "python-3.15.0b2-iOS-XCframework.tar.gz", True),
        ("3.14.2", "docs/python-3.14.2-docs.epub", False),
        ("3.16.0a1", "python-3.16.0a1-amd64.zip", False),
    ],
)
def test_signatures_are_needed_for_what_the_release_database_lists(
    pinned: Profile, tag: str, path: str, signed: bool
) -> None:
    assert pinned.needs_signature(ReleaseTag.parse(tag), path) is signed
