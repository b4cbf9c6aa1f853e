"""Signing in the release flow, with bundles of the private Sigstore instance: signatures added
after /ready withdraw no claim, a /publish for unsigned files offers to sign them at the
confirmation (or takes them signed in a terminal), a bad staged signature is refused with the
command that re-signs, and the gate's verifier holds a private instance's bundles to the same
rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.signing.verifier import SigstoreVerifier
from tests.signing_fixtures import (
    RM,
    both_rekors,
    instance_world,
    signed_paths,
    signing_instance,
    sigstore_instance,
)
from tests.sigstore_instance import SigstoreInstance

__all__ = ["signing_instance", "sigstore_instance"]

TAG = "3.14.1"


def run_sign(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["sign", TAG, "--config", str(root / "relbot.toml")])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


@both_rekors
async def test_signing_after_ready_withdraws_no_claim_and_publish_goes_through(
    tmp_path: Path,
    signing_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, signing_instance)
    paths = signed_paths(world, world.stage(TAG))
    await world.ready_all(TAG)
    offered = await world.say("hugo", f"/publish {TAG}")
    assert offered.confirm is not None and offered.confirm.login_url is not None
    assert f"Signing: {len(paths)} files python.org lists" in offered.text

    # The RM signs in a terminal instead of logging in from chat.
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", signing_instance.token(*RM))
    run_sign(tmp_path, capsys)
    await world.gate.scan()

    tag = ReleaseTag.parse(TAG)
    assert world.events(TAG, EventKind.WITHDRAWN) == []
    assert set(world.store.release(tag).claims) == set(world.profile.roles_for(tag))
    assert not any("withdrawn" in n for n in world.chat.texts(ChannelKind.NOTICE))
    summary = world.chat.updates[-1][1].text
    assert f"signatures: {len(paths)} of {len(paths)} files signed and valid" in summary
    line = await world.plan(TAG)
    assert line.count(" ") == 3  # nothing left to sign: no login
    reply = await world.say("hugo", line)
    assert not reply.private, reply.text
    public = world.public_files()
    for path in paths:
        target = (
            f"doc/{TAG}/{path.removeprefix('docs/')}"
            if path.startswith("docs/")
            else (f"{TAG}/{path}")
        )
        for suffix in ("", ".sigstore", ".sig", ".crt"):
            assert target + suffix in public, target + suffix


async def test_a_bad_staged_signature_blocks_publish_and_names_the_line_that_re_signs(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM))
    run_sign(tmp_path, capsys)
    world.write(TAG, "Python-3.14.1.tgz", b"rebuilt after signing\n")  # its bundle no longer fits
    await world.ready_all(TAG)

    refused = await world.say("hugo", f"/publish {TAG}")

    assert refused.private
    assert "signature of Python-3.14.1.tgz: digest mismatch" in refused.text
    assert f"run: relbot sign {TAG} --config {tmp_path / 'relbot.toml'}" in refused.text


async def test_a_bundle_replaced_after_ready_still_withdraws_the_claim(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM))
    run_sign(tmp_path, capsys)
    await world.say("ned", f"/ready macos {TAG}")
    bundle = world.staging / TAG / "python-3.14.1-macos11.pkg.sigstore"
    bundle.write_text("{}")  # an invalid bundle: relbot sign replaces it
    run_sign(tmp_path, capsys)
    await world.gate.scan()
    assert "macos" not in world.store.release(ReleaseTag.parse(TAG)).claims
    assert any(
        "python-3.14.1-macos11.pkg.sigstore" in n and "after /ready" in n
        for n in world.chat.texts(ChannelKind.NOTICE)
    )


async def test_the_gate_names_a_private_instance_bundle_of_the_wrong_signer(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM))
    run_sign(tmp_path, capsys)
    # The same bundles, checked by a bot that expects someone else for 3.14.
    verifier = SigstoreVerifier(
        str(tmp_path / "trust" / "instance.json"),
        lambda tag: ("savannah@python.org", "https://github.com/login/oauth"),
    )
    digest = world.storage.digest(ReleaseTag.parse(TAG), ["Python-3.14.1.tgz"])
    bundle = (world.staging / TAG / "Python-3.14.1.tgz.sigstore").read_bytes()
    result = verifier.verify(
        ReleaseTag.parse(TAG), "Python-3.14.1.tgz", digest["Python-3.14.1.tgz"], bundle
    )
    assert result.reason == "wrong signer: expected savannah@python.org, found hugo@python.org"


@both_rekors
def test_a_private_instance_bundle_is_refused_under_the_production_root(
    tmp_path: Path,
    signing_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, signing_instance)
    world.stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", signing_instance.token(*RM))
    run_sign(tmp_path, capsys)
    tag = ReleaseTag.parse(TAG)
    digest = world.storage.digest(tag, ["Python-3.14.1.tgz"])["Python-3.14.1.tgz"]
    bundle = (world.staging / TAG / "Python-3.14.1.tgz.sigstore").read_bytes()
    own = SigstoreVerifier(str(tmp_path / "trust" / "instance.json"), lambda t: RM)
    assert own.verify(tag, "Python-3.14.1.tgz", digest, bundle).status.value == "valid"
    production = SigstoreVerifier("production", lambda t: RM)
    result = production.verify(tag, "Python-3.14.1.tgz", digest, bundle)
    assert result.status.value == "invalid"
    assert result.reason == "wrong trust root: its transparency log is not in production"


@both_rekors
def test_a_client_trust_config_and_its_bare_trusted_root_verify_alike(
    tmp_path: Path,
    signing_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, signing_instance)
    world.stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", signing_instance.token(*RM))
    run_sign(tmp_path, capsys)
    tag = ReleaseTag.parse(TAG)
    digest = world.storage.digest(tag, ["Python-3.14.1.tgz"])["Python-3.14.1.tgz"]
    bundle = (world.staging / TAG / "Python-3.14.1.tgz.sigstore").read_bytes()
    bare = signing_instance.write_trusted_root(tmp_path / "trust" / "root.json")
    assert json.loads(bare.read_text())["mediaType"].startswith(
        "application/vnd.dev.sigstore.trustedroot"
    )
    verifier = SigstoreVerifier(str(bare), lambda t: RM)
    assert verifier.trust_root == "root.json"
    assert verifier.verify(tag, "Python-3.14.1.tgz", digest, bundle).status.value == "valid"
    flipped = "0" * 64
    mismatch = verifier.verify(tag, "Python-3.14.1.tgz", flipped, bundle)
    assert mismatch.reason.startswith("digest mismatch")
