"""The built-in cpython profile, as docs/expected-files.md describes CPython's download folder,
and profiles as data that another project can bring."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bot.domain.profile import Classification, FileKind, Profile, load_profile
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError

LISTING = Path(__file__).parents[1] / "data" / "cpython-3.14.0-ftp-listing.txt"

DOCS = [
    "docs/python-{v}-docs.epub",
    "docs/python-{v}-docs-html.tar.bz2",
    "docs/python-{v}-docs-html.zip",
    "docs/python-{v}-docs-texinfo.tar.bz2",
    "docs/python-{v}-docs-texinfo.zip",
    "docs/python-{v}-docs-text.tar.bz2",
    "docs/python-{v}-docs-text.zip",
]
WINDOWS = [
    "python-{v}.exe",
    "python-{v}-amd64.exe",
    "python-{v}-arm64.exe",
    "python-{v}-embed-win32.zip",
    "python-{v}-embed-amd64.zip",
    "python-{v}-embed-arm64.zip",
]


@pytest.fixture(scope="module")
def cpython() -> Profile:
    return load_profile("cpython")


def required(profile: Profile, tag: str) -> dict[str, set[str]]:
    """role → required paths of ``tag``."""
    found: dict[str, set[str]] = {}
    for expected in profile.expected(ReleaseTag.parse(tag)):
        found.setdefault(expected.role, set()).add(expected.path)
    return found


def fill(names: list[str], tag: str) -> set[str]:
    return {name.format(v=tag) for name in names}


def kind_of(profile: Profile, tag: str, path: str) -> Classification:
    return profile.classify(ReleaseTag.parse(tag), path)


# -- required files ---------------------------------------------------------------------------


def test_the_cpython_profile_has_four_roles(cpython: Profile) -> None:
    assert cpython.roles == ("source", "docs", "windows", "macos")


def test_a_3_13_release_requires_tarballs_docs_six_windows_files_the_manifest_and_the_pkg(
    cpython: Profile,
) -> None:
    assert required(cpython, "3.13.1") == {
        "source": {"Python-3.13.1.tgz", "Python-3.13.1.tar.xz"},
        "docs": fill(DOCS, "3.13.1"),
        "windows": fill(WINDOWS, "3.13.1") | {"windows-3.13.1.json"},
        "macos": {"python-3.13.1-macos11.pkg"},
    }


def test_3_14_adds_the_android_builds_and_the_pymanager_index(cpython: Profile) -> None:
    assert required(cpython, "3.14.1") == {
        "source": {
            "Python-3.14.1.tgz",
            "Python-3.14.1.tar.xz",
            "python-3.14.1-aarch64-linux-android.tar.gz",
            "python-3.14.1-x86_64-linux-android.tar.gz",
        },
        "docs": fill(DOCS, "3.14.1"),
        "windows": fill(WINDOWS, "3.14.1") | {"windows-3.14.1.json"},
        "macos": {"python-3.14.1-macos11.pkg"},
    }


def test_3_15_adds_the_ios_xcframework(cpython: Profile) -> None:
    source = required(cpython, "3.15.0rc1")["source"]

    assert source == {
        "Python-3.15.0rc1.tgz",
        "Python-3.15.0rc1.tar.xz",
        "python-3.15.0rc1-aarch64-linux-android.tar.gz",
        "python-3.15.0rc1-x86_64-linux-android.tar.gz",
        "python-3.15.0rc1-iOS-XCframework.tar.gz",
    }


def test_ios_is_not_built_for_3_14_and_the_capitalised_name_is_unexpected(
    cpython: Profile,
) -> None:
    assert "python-3.14.1-iOS-XCframework.tar.gz" not in required(cpython, "3.14.1")["source"]
    for name in ("python-3.14.1-iOS-XCframework.tar.gz", "Python-3.14.1-iOS-XCframework.tar.gz"):
        assert kind_of(cpython, "3.14.1", name).kind is FileKind.UNEXPECTED
    assert kind_of(cpython, "3.15.0", "Python-3.15.0-iOS-XCframework.tar.gz").kind is (
        FileKind.UNEXPECTED
    )


@pytest.mark.parametrize(
    ("tag", "has_docs"),
    [
        ("3.14.0a7", False),
        ("3.14.0b1", False),
        ("3.14.0rc1", True),
        ("3.14.0", True),
        ("3.13.9", True),
    ],
)
def test_docs_are_required_only_for_rc_and_final(
    cpython: Profile, tag: str, has_docs: bool
) -> None:
    parsed = ReleaseTag.parse(tag)

    assert ("docs" in cpython.roles_for(parsed)) is has_docs
    assert ("docs" in required(cpython, tag)) is has_docs
    assert any(p.startswith("docs/") for p in required(cpython, tag).get("docs", ())) is has_docs


def test_docs_staged_for_a_beta_are_unexpected(cpython: Profile) -> None:
    assert (
        kind_of(cpython, "3.14.0b1", "docs/python-3.14.0b1-docs.epub").kind is FileKind.UNEXPECTED
    )


def test_every_role_but_docs_takes_part_in_a_prerelease(cpython: Profile) -> None:
    assert cpython.roles_for(ReleaseTag.parse("3.14.0a1")) == ("source", "windows", "macos")


# -- where files go ---------------------------------------------------------------------------


def test_docs_are_staged_under_docs_and_published_under_doc_tag(cpython: Profile) -> None:
    tag = ReleaseTag.parse("3.14.0rc2")

    assert cpython.public_folder(tag, "docs") == "doc/3.14.0rc2"
    assert (
        cpython.public_target(tag, "docs", "docs/python-3.14.0rc2-docs.epub")
        == "doc/3.14.0rc2/python-3.14.0rc2-docs.epub"
    )


def test_artifacts_of_a_prerelease_go_to_the_normalized_version_folder(cpython: Profile) -> None:
    tag = ReleaseTag.parse("3.14.0rc2")

    assert cpython.public_folder(tag) == "3.14.0"
    assert cpython.public_target(tag, "windows", "python-3.14.0rc2.exe") == (
        "3.14.0/python-3.14.0rc2.exe"
    )
    assert cpython.public_target(tag, "windows", "amd64rc2/core.msi") == "3.14.0/amd64rc2/core.msi"
    assert cpython.public_target(tag, "source", "Python-3.14.0rc2.tgz") == (
        "3.14.0/Python-3.14.0rc2.tgz"
    )


def test_artifacts_of_a_final_go_to_its_version_folder(cpython: Profile) -> None:
    tag = ReleaseTag.parse("3.14.1")

    assert cpython.public_target(tag, "macos", "python-3.14.1-macos11.pkg") == (
        "3.14.1/python-3.14.1-macos11.pkg"
    )
    assert cpython.public_target(tag, "docs", "docs/python-3.14.1-docs.epub") == (
        "doc/3.14.1/python-3.14.1-docs.epub"
    )


# -- allowed files and sidecars ---------------------------------------------------------------


@pytest.mark.parametrize("folder", ["amd64rc1", "arm64rc1", "win32rc1"])
def test_msi_folders_named_for_the_prerelease_are_allowed_for_it(
    cpython: Profile, folder: str
) -> None:
    for path in (f"{folder}/core.msi", f"{folder}/core_d.msi", f"{folder}/sub/x.cab"):
        assert kind_of(cpython, "3.14.0rc1", path) == Classification(FileKind.ALLOWED, "windows")


@pytest.mark.parametrize("folder", ["amd64", "arm64", "win32"])
def test_plain_msi_folders_are_allowed_for_a_final(cpython: Profile, folder: str) -> None:
    assert kind_of(cpython, "3.14.1", f"{folder}/core.msi") == Classification(
        FileKind.ALLOWED, "windows"
    )


@pytest.mark.parametrize(
    ("tag", "path"),
    [
        ("3.14.0rc1", "amd64/core.msi"),  # a final's folder in a prerelease
        ("3.14.1", "amd64rc1/core.msi"),  # a prerelease's folder in a final
        ("3.14.0rc2", "amd64rc1/core.msi"),  # another prerelease's folder
        ("3.14.0b3", "amd64b2/core.msi"),
    ],
)
def test_msi_folders_of_another_stage_are_unexpected(cpython: Profile, tag: str, path: str) -> None:
    assert kind_of(cpython, tag, path).kind is FileKind.UNEXPECTED


@pytest.mark.parametrize(
    "name",
    [
        "python-3.14.1-amd64.zip",
        "python-3.14.1-arm64.zip",
        "python-3.14.1-win32.zip",
        "python-3.14.1t-amd64.zip",
        "python-3.14.1t-win32.zip",
        "python-3.14.1-embeddable-amd64.zip",
        "python-3.14.1-test-arm64.zip",
    ],
)
def test_pymanager_zips_are_allowed_for_windows(cpython: Profile, name: str) -> None:
    assert kind_of(cpython, "3.14.1", name) == Classification(FileKind.ALLOWED, "windows")


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("Python-3.14.1.tgz.sigstore", "source"),
        ("Python-3.14.1.tar.xz.spdx.json", "source"),
        ("python-3.14.1-aarch64-linux-android.tar.gz.sigstore", "source"),
        ("python-3.14.1-amd64.exe.sig", "windows"),
        ("python-3.14.1-amd64.exe.crt", "windows"),
        ("python-3.14.1-amd64.exe.spdx.json", "windows"),
        ("windows-3.14.1.json.sigstore", "windows"),
        ("python-3.14.1-macos11.pkg.sigstore", "macos"),
        ("docs/python-3.14.1-docs.epub.sigstore", "docs"),
        # sidecars of allowed files belong to the allowed file's role
        ("python-3.14.1-amd64.zip.sigstore", "windows"),
        ("amd64/core.msi.sig", "windows"),
        ("python-3.14.1-x86_64-linux-android.tar.gz.sigstore", "source"),
    ],
)
def test_sidecars_are_classified_with_their_artifacts_role(
    cpython: Profile, path: str, role: str
) -> None:
    assert kind_of(cpython, "3.14.1", path) == Classification(FileKind.SIDECAR, role)


def test_gpg_signatures_are_allowed_up_to_3_13_only(cpython: Profile) -> None:
    assert kind_of(cpython, "3.13.1", "Python-3.13.1.tgz.asc") == Classification(
        FileKind.SIDECAR, "source"
    )
    assert kind_of(cpython, "3.12.9", "python-3.12.9-amd64.exe.asc") == Classification(
        FileKind.SIDECAR, "windows"
    )
    assert kind_of(cpython, "3.14.1", "Python-3.14.1.tgz.asc").kind is FileKind.UNEXPECTED
    assert kind_of(cpython, "3.15.0", "Python-3.15.0.tgz.asc").kind is FileKind.UNEXPECTED


def test_required_files_are_classified_with_their_role(cpython: Profile) -> None:
    tag = ReleaseTag.parse("3.14.1")

    for expected in cpython.expected(tag):
        assert cpython.classify(tag, expected.path) == Classification(
            FileKind.REQUIRED, expected.role
        )


@pytest.mark.parametrize(
    "path",
    [
        "notes.txt",
        "python-3.14.2.exe",  # another release's file
        "python-3.14.0rc1-amd64.exe",
        "Python-3.14.1.zip",
        "python-3.14.1-docs.epub",  # a docs file outside docs/
        "docs/python-3.14.1-docs.pdf",
        "docs/python-3.14.1.exe",
        "README.txt.sigstore",  # a sidecar of nothing we know
        "python-3.14.1-macos11.pkg.md5",
        "python-3.14.1t-amd64/x.zip",
        "sub/python-3.14.1.exe",
    ],
)
def test_anything_else_is_unexpected(cpython: Profile, path: str) -> None:
    assert kind_of(cpython, "3.14.1", path) == Classification(FileKind.UNEXPECTED)


# -- indexes and signers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "is_index"),
    [
        ("windows-3.14.0.json", True),
        ("windows-3.14.0rc1.json", True),
        ("3.14.0/windows-3.14.0.json", True),
        ("python-3.14.0.exe", False),
        ("Python-3.14.0.tgz.spdx.json", False),
        ("windows-3.14.0.json.sigstore", False),
    ],
)
def test_the_pymanager_index_is_an_index(cpython: Profile, path: str, is_index: bool) -> None:
    assert cpython.is_index(path) is is_index


@pytest.mark.parametrize(
    ("tag", "signer"),
    [
        ("3.10.16", ("pablogsal@python.org", "https://accounts.google.com")),
        ("3.11.11", ("pablogsal@python.org", "https://accounts.google.com")),
        ("3.12.9", ("thomas@python.org", "https://accounts.google.com")),
        ("3.13.1", ("thomas@python.org", "https://accounts.google.com")),
        ("3.14.0rc2", ("hugo@python.org", "https://github.com/login/oauth")),
        ("3.15.0a1", ("hugo@python.org", "https://github.com/login/oauth")),
        ("3.16.0", ("savannah@python.org", "https://github.com/login/oauth")),
        ("3.17.0b1", ("savannah@python.org", "https://github.com/login/oauth")),
    ],
)
def test_each_branch_has_its_sigstore_signer(
    cpython: Profile, tag: str, signer: tuple[str, str]
) -> None:
    assert cpython.signer(ReleaseTag.parse(tag)) == signer


def test_a_branch_without_a_known_signer_has_none(cpython: Profile) -> None:
    assert cpython.signer(ReleaseTag.parse("3.9.20")) is None


# -- the real 3.14.0 download folder ----------------------------------------------------------


def b3_listing() -> list[str]:
    """The b3 files of the real listing; an MSI folder stands for a file inside it."""
    names = [
        line.strip()
        for line in LISTING.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#") and "b3" in line
    ]
    return [f"{name}core.msi" if name.endswith("/") else name for name in names]


def test_the_listing_holds_the_b3_prerelease() -> None:
    names = b3_listing()

    assert len(names) == 63
    assert "windows-3.14.0b3.json" in names
    assert "amd64b3/core.msi" in names


def test_every_file_of_a_real_prerelease_folder_is_expected(cpython: Profile) -> None:
    tag = ReleaseTag.parse("3.14.0b3")

    unexpected = [p for p in b3_listing() if cpython.classify(tag, p).kind is FileKind.UNEXPECTED]

    # The fixture is release-tools' fake listing; CPython writes the iOS build with a lowercase
    # "python" from 3.15 on, so its capitalised 3.14 iOS entries are rightly unexpected.
    assert unexpected and all("-iOS-XCframework" in p for p in unexpected)


def test_every_required_file_of_b3_is_in_the_real_listing(cpython: Profile) -> None:
    tag = ReleaseTag.parse("3.14.0b3")

    assert {f.path for f in cpython.expected(tag)} <= set(b3_listing())


def test_other_prereleases_in_the_shared_folder_are_unexpected_for_b3(cpython: Profile) -> None:
    tag = ReleaseTag.parse("3.14.0b3")
    others = [
        line.strip()
        for line in LISTING.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#") and "b3" not in line
    ]

    assert others
    for name in others:
        path = f"{name}core.msi" if name.endswith("/") else name
        assert cpython.classify(tag, path).kind is FileKind.UNEXPECTED, path


# -- profiles as data -------------------------------------------------------------------------

CUSTOM = """
    name = "widget"
    indexes = ["index-*.json"]
    sidecars = [{ suffix = ".sig" }]

    [roles.build]
    required = [{ name = "widget-{tag}.tar.gz" }, { name = "index-{tag}.json" }]
    allowed = [{ name = "extras/**" }]

    [roles.manual]
    folder = "manual"
    public = "manual/{tag}"
    stages = ["final"]
    required = [{ name = "widget-{tag}.pdf", since = "2.0" }]
"""


def test_a_profile_is_loaded_from_a_toml_file_by_path(tmp_path: Path) -> None:
    (tmp_path / "widget.toml").write_text(textwrap.dedent(CUSTOM), encoding="utf-8")

    profile = load_profile(str(tmp_path / "widget.toml"))
    final = ReleaseTag.parse("2.1.0")

    assert profile.name == "widget"
    assert profile.roles == ("build", "manual")
    assert [(f.role, f.path) for f in profile.expected(final)] == [
        ("build", "widget-2.1.0.tar.gz"),
        ("build", "index-2.1.0.json"),
        ("manual", "manual/widget-2.1.0.pdf"),
    ]
    assert profile.roles_for(ReleaseTag.parse("2.1.0rc1")) == ("build",)
    assert profile.public_target(final, "manual", "manual/widget-2.1.0.pdf") == (
        "manual/2.1.0/widget-2.1.0.pdf"
    )
    assert profile.classify(final, "extras/a/b.txt") == Classification(FileKind.ALLOWED, "build")
    assert profile.classify(final, "widget-2.1.0.tar.gz.sig") == Classification(
        FileKind.SIDECAR, "build"
    )
    assert profile.classify(final, "widget-2.1.0.tar.gz.sigstore").kind is FileKind.UNEXPECTED
    assert profile.is_index("index-2.1.0.json")
    assert profile.signer(final) is None


def test_a_relative_profile_path_resolves_against_the_given_folder(tmp_path: Path) -> None:
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "widget.toml").write_text(textwrap.dedent(CUSTOM), encoding="utf-8")

    assert load_profile("profiles/widget.toml", base=tmp_path).name == "widget"


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (("[roles.build]", "[roles.build]\nrequried = []"), "roles.build.requried"),
        (('name = "widget"', 'name = "widget"\ncolour = "blue"'), "colour"),
        (('{ name = "extras/**" }', '{ name = "extras/**", sinse = "2.0" }'), "sinse"),
    ],
)
def test_a_profile_with_an_unknown_key_is_refused_naming_the_key(
    tmp_path: Path, change: tuple[str, str], key: str
) -> None:
    text = textwrap.dedent(CUSTOM).replace(*change, 1)
    (tmp_path / "widget.toml").write_text(text, encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        load_profile(str(tmp_path / "widget.toml"))

    assert key in str(caught.value)


def test_a_profile_with_a_bad_branch_is_refused_naming_the_key(tmp_path: Path) -> None:
    text = textwrap.dedent(CUSTOM).replace('since = "2.0"', 'since = "two"')
    (tmp_path / "widget.toml").write_text(text, encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        load_profile(str(tmp_path / "widget.toml"))

    assert "roles.manual.required.0.since" in str(caught.value)


def test_an_unknown_profile_name_is_refused_listing_the_built_in_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_profile("cpyhton", base=tmp_path)

    assert "'cpyhton'" in str(caught.value)
    assert "cpython" in str(caught.value).split("built-in:")[1]
