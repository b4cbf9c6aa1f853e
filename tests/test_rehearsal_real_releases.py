"""Console rehearsals of the kinds of release CPython really makes: a security release (source
and docs only), a release with a waived file, one with a waived role, and a late file added
to it afterwards. The bot runs as a subprocess; branch statuses come from the pinned cycle."""

from __future__ import annotations

from pathlib import Path

from bot.config import load_config
from bot.domain.tags import ReleaseTag
from tests.console_driver import publish_through_console
from tests.pinned import NO_SIGNATURES, RELEASE_CYCLE_LINE

TEAM = """
[people.hugo]
rm = ["3.14"]
roles = ["source", "docs"]

[people.thomas]
rm = ["3.12"]
roles = ["source", "docs"]

[people.steve]
roles = ["windows"]

[people.ned]
roles = ["macos"]
"""


def team(folder: Path) -> Path:
    path = folder / "relbot.toml"
    path.write_text(RELEASE_CYCLE_LINE + TEAM + NO_SIGNATURES, encoding="utf-8")
    for name in ("staging", "public"):  # `relbot run` creates no folder
        (folder / "relbot-data" / name).mkdir(parents=True, exist_ok=True)
    return path


def stage(folder: Path, tag: str, skip: tuple[str, ...] = (), roles: tuple[str, ...] = ()) -> None:
    """Every required file of ``tag`` (of ``roles``, default all) except ``skip``."""
    profile = load_config(folder / "relbot.toml").profile
    for expected in profile.expected(ReleaseTag.parse(tag)):
        if expected.path in skip or (roles and expected.role not in roles):
            continue
        target = folder / "relbot-data" / "staging" / tag / expected.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{expected.path} built for {tag}\n", encoding="utf-8")


def public(folder: Path) -> set[str]:
    root = folder / "relbot-data" / "public"
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_security_release_publishes_its_source_and_docs_only(tmp_path: Path) -> None:
    team(tmp_path)
    stage(tmp_path, "3.12.13")
    lines = [
        "/status 3.12.13",
        "/ready source 3.12.13",
        "/ready docs 3.12.13",
        "/publish 3.12.13",
    ]

    session = publish_through_console(tmp_path, lines, "3.12.13", args=["--as", "thomas"])

    assert session.returncode == 0, session.stderr
    assert "branch 3.12: security (source and docs only)" in session.before_confirm
    assert "all 2 roles ready; publishable" in session.before_confirm
    assert public(tmp_path) == {"3.12.13/Python-3.12.13.tgz", "3.12.13/Python-3.12.13.tar.xz"} | {
        f"doc/3.12.13/python-3.12.13-docs{suffix}"
        for suffix in (
            ".epub",
            "-html.tar.bz2",
            "-html.zip",
            "-texinfo.tar.bz2",
            "-texinfo.zip",
            "-text.tar.bz2",
            "-text.zip",
        )
    }
    assert "3.12.13 is published: 9 files" in session.after_confirm


def test_a_release_with_a_waived_file_publishes_without_it(tmp_path: Path) -> None:
    team(tmp_path)
    arm64 = "python-3.14.1-arm64.exe"
    stage(tmp_path, "3.14.1", skip=(arm64,))
    lines = [
        "/as hugo",
        f"/waive 3.14.1 {arm64} the ARM64 build broke",
        "/ready source 3.14.1",
        "/ready docs 3.14.1",
        "/as steve",
        "/ready windows 3.14.1",
        "/as ned",
        "/ready macos 3.14.1",
        "/as hugo",
        "/publish 3.14.1",
    ]

    session = publish_through_console(tmp_path, lines, "3.14.1")

    assert session.returncode == 0, session.stderr
    assert f"waived: {arm64} (waived by hugo: the ARM64 build broke)" in session.before_confirm
    files = public(tmp_path)
    assert "3.14.1/python-3.14.1-amd64.exe" in files and f"3.14.1/{arm64}" not in files
    assert "3.14.1 is published" in session.after_confirm


def test_a_waived_role_then_its_late_file(tmp_path: Path) -> None:
    team(tmp_path)
    pkg = "python-3.14.2-macos11.pkg"
    stage(tmp_path, "3.14.2", roles=("source", "docs", "windows"))
    first = [
        "/as hugo",
        "/waive 3.14.2 macos notarization is down",
        "/ready source 3.14.2",
        "/ready docs 3.14.2",
        "/as steve",
        "/ready windows 3.14.2",
        "/as hugo",
        "/publish 3.14.2",
    ]
    session = publish_through_console(tmp_path, first, "3.14.2")
    assert session.returncode == 0, session.stderr
    assert "macos    waived     by hugo: notarization is down" in session.before_confirm
    before = public(tmp_path)
    assert before and not any(p.endswith(".pkg") for p in before)

    stage(tmp_path, "3.14.2", roles=("macos",))
    late = ["/as ned", "/ready macos 3.14.2", "/as hugo", "/publish 3.14.2"]
    session = publish_through_console(tmp_path, late, "3.14.2")

    assert session.returncode == 0, session.stderr
    assert "Publish plan for 3.14.2: 1 files" in session.before_confirm
    assert public(tmp_path) == before | {f"3.14.2/{pkg}"}
    assert f"3.14.2 has 1 file added: {pkg}; confirmed by hugo." in session.after_confirm
