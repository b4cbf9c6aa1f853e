"""Signatures in the gate: verified in staging before anything is published, with the real
Sigstore bundles of tests/data/sigstore (staging trust root, verified offline)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from bot.demo import stage_demo
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from tests.conftest import TEAM_TOML, World
from tests.console_driver import publish_through_console

DATA = Path(__file__).parent / "data" / "sigstore"
ARTIFACT = (DATA / "bundle_v3.txt").read_bytes()
BUNDLE = (DATA / "bundle_v3.txt.sigstore").read_bytes()
SIGNED_BY_TEST_SIGNER = """
    [signatures]
    require = {require}
    trusted_root = "staging"
    identities = {{ "3.14" = ["{identity}", "https://github.com/login/oauth"] }}
"""


def signed_world(tmp_path: Path, *, require: bool = True, identity: str = "") -> World:
    """Every required file has the test artifact's bytes, so the one real bundle signs all."""
    toml = SIGNED_BY_TEST_SIGNER.format(
        require=str(require).lower(), identity=identity or "william@yossarian.net"
    )
    return World(tmp_path, toml)


def signed(paths: list[str]) -> list[str]:
    """The staged files that need a signature: not the docs (the release database does not
    list them, so nobody signs them)."""
    return [p for p in paths if not p.startswith("docs/")]


def sign_all(world: World, tag: str, paths: list[str]) -> None:
    for path in paths:
        world.write(tag, path + ".sigstore", BUNDLE)


async def test_every_file_signed_publishes_with_its_bundles(tmp_path: Path) -> None:
    world = signed_world(tmp_path)
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    await world.ready_all("3.14.1")
    status = await world.say("eve", "/status 3.14.1")
    n = len(signed(paths))
    assert f"signatures: {n} of {n} files signed and valid" in status.text
    reply = await world.say("hugo", await world.plan("3.14.1"))
    assert not reply.private, reply.text
    assert "3.14.1/python-3.14.1.exe.sigstore" in world.public_files()
    assert "doc/3.14.1/python-3.14.1-docs.epub.sigstore" in world.public_files()


async def test_a_missing_signature_is_left_to_the_confirmation_when_required(
    tmp_path: Path,
) -> None:
    """Not a blocker: the plan signs it, after a login. Here the login provider cannot be
    reached (a closed loopback port), so /publish says so in one sentence and changes nothing."""
    toml = SIGNED_BY_TEST_SIGNER.format(require="true", identity="william@yossarian.net")
    world = World(tmp_path, toml + '    issuer = "http://127.0.0.1:9/oauth"\n')
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", [p for p in paths if p != "python-3.14.1-macos11.pkg"])
    await world.ready_all("3.14.1")
    status = await world.say("eve", "/status 3.14.1")
    assert "3.14.1: all 4 roles ready; publishable" in status.text
    assert "unsigned: python-3.14.1-macos11.pkg (the RM signs them at /publish)" in status.text
    reply = await world.say("hugo", "/publish 3.14.1")
    assert reply.private and reply.confirm is None
    assert reply.text.startswith(
        "The Sigstore login at http://127.0.0.1:9/oauth cannot be reached (ConnectError)."
    )
    assert "sign in a terminal: relbot sign 3.14.1" in reply.text
    assert "planned" not in world.events("3.14.1")


async def test_a_signature_by_the_wrong_person_is_named_in_status_and_blocks(
    tmp_path: Path,
) -> None:
    world = signed_world(tmp_path, identity="hugo@python.org")
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    await world.ready_all("3.14.1")
    status = await world.say("eve", "/status 3.14.1")
    assert f"signatures: 0 of {len(signed(paths))} files signed and valid (required)" in status.text
    assert "wrong signer" in status.text and "william@yossarian.net" in status.text
    reply = await world.say("hugo", "/publish 3.14.1")
    assert reply.private and "wrong signer" in reply.text


async def test_a_file_changed_after_signing_is_a_digest_mismatch(tmp_path: Path) -> None:
    world = signed_world(tmp_path)
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    flipped = bytearray(ARTIFACT)
    flipped[0] ^= 1
    world.write("3.14.1", "Python-3.14.1.tgz", bytes(flipped))
    status = await world.say("eve", "/status 3.14.1")
    assert "Python-3.14.1.tgz: digest mismatch" in status.text


async def test_the_old_v0_1_bundle_is_reported_not_crashed_on(tmp_path: Path) -> None:
    world = signed_world(tmp_path)
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    world.write(
        "3.14.1", "Python-3.14.1.tgz.sigstore", (DATA / "Python-3.12.5.tgz.sigstore").read_bytes()
    )
    status = await world.say("eve", "/status 3.14.1")
    assert "Python-3.14.1.tgz: too-old bundle format" in status.text


async def test_unsigned_files_never_block_when_signatures_are_not_required(
    tmp_path: Path,
) -> None:
    world = signed_world(tmp_path, require=False)
    world.stage("3.14.1", content=ARTIFACT)
    await world.ready_all("3.14.1")
    status = await world.say("eve", "/status 3.14.1")
    assert "signatures: 0 of 12 files signed and valid (not required)" in status.text
    assert ".sigstore" not in status.text  # unsigned files are counted, not listed
    reply = await world.say("hugo", await world.plan("3.14.1"))
    assert not reply.private, reply.text


async def test_a_signature_changed_after_ready_withdraws_the_claim(tmp_path: Path) -> None:
    world = signed_world(tmp_path)
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    await world.say("ned", "/ready macos 3.14.1")
    world.write("3.14.1", "python-3.14.1-macos11.pkg.sigstore", BUNDLE + b"\n")
    await world.gate.scan()
    assert "macos" not in world.store.release(ReleaseTag.parse("3.14.1")).claims
    assert any(
        "python-3.14.1-macos11.pkg.sigstore changed after /ready" in n
        for n in world.chat.texts(ChannelKind.NOTICE)
    )


async def test_steady_state_scans_read_no_bundle_and_hash_nothing_again(tmp_path: Path) -> None:
    world = signed_world(tmp_path)
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    calls = {"digest": 0, "read": 0}
    storage = world.storage
    digest, read = storage.digest, storage.read

    def counting_digest(
        tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        calls["digest"] += len(paths)
        return digest(tag, paths, fresh=fresh)

    def counting_read(tag: ReleaseTag, path: str, limit: int) -> bytes:
        calls["read"] += 1
        return read(tag, path, limit)

    storage.digest = counting_digest  # type: ignore[method-assign]
    storage.read = counting_read  # type: ignore[method-assign]
    await world.gate.scan()
    assert calls == {"digest": len(signed(paths)), "read": len(signed(paths))}
    await world.gate.scan()
    await world.gate.scan()
    assert calls == {"digest": len(signed(paths)), "read": len(signed(paths))}


def test_console_rehearsal_with_required_signatures_publishes_the_bundles(tmp_path: Path) -> None:
    (tmp_path / "relbot.toml").write_text(
        textwrap.dedent("""
        [signatures]
        require = true
        trusted_root = "staging"
        identities = { "3.14" = ["william@yossarian.net", "https://github.com/login/oauth"] }

        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs", "windows", "macos"]
        """)
    )
    staging = tmp_path / "relbot-data" / "staging"
    (tmp_path / "relbot-data" / "public").mkdir(parents=True)  # `relbot run` creates no folder
    for file in stage_demo(staging, load_profile("cpython")):
        file.write_bytes(ARTIFACT)
        file.with_name(file.name + ".sigstore").write_bytes(BUNDLE)
    lines = [f"/ready {role} 3.14.1" for role in ("source", "docs", "windows", "macos")]
    session = publish_through_console(
        tmp_path, [*lines, "/status 3.14.1", "/publish 3.14.1"], "3.14.1"
    )
    assert session.returncode == 0, session.stderr
    assert "signatures: 12 of 12 files signed and valid (required)" in session.before_confirm
    assert "Published 3.14.1: 38 files are public." in session.after_confirm
    public = tmp_path / "relbot-data" / "public"
    assert (public / "3.14.1" / "python-3.14.1.exe.sigstore").read_bytes() == BUNDLE


async def test_a_plan_whose_files_came_signed_says_nothing_of_signing_where_the_profile_wants_it(
    tmp_path: Path,
) -> None:
    # No `require` in [signatures]: the profile decides, by the release (3.14 is after its
    # first signed version). Every file came signed, so the plan signs nothing, and it is
    # not a release that needs no signatures either.
    toml = SIGNED_BY_TEST_SIGNER.replace("    require = {require}\n", "")
    world = World(tmp_path, toml.format(identity="william@yossarian.net"))
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    await world.ready_all("3.14.1")

    plan = await world.say("hugo", "/publish 3.14.1")

    assert plan.confirm is not None and plan.confirm.login_url is None, plan.text
    assert "Signatures:" not in plan.text and "Signing:" not in plan.text, plan.text


async def test_a_release_older_than_the_profile_s_first_signed_one_is_planned_without_them(
    tmp_path: Path,
) -> None:
    # No `require` in [signatures]: the cpython profile wants signatures from 3.10 on, so a
    # 3.9 security release is planned as not needing them, and the plan does not blame the
    # config for it.
    team = TEAM_TOML.replace('rm = ["3.14", "3.15"]', 'rm = ["3.9", "3.14", "3.15"]')
    world = World(tmp_path, '\n[signatures]\ntrusted_root = "staging"\n', team_toml=team)
    world.stage("3.9.25")
    await world.ready_all("3.9.25")

    plan = await world.say("hugo", "/publish 3.9.25")

    assert plan.text.splitlines()[-2] == "Signatures: not required for 3.9.25.", plan.text
