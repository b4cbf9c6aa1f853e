"""``relbot sign TAG`` end to end: the real sigstore-python signer and verifier against the
private Sigstore instance of tests/sigstore_instance, on local staging."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from cryptography import x509

from bot.cli import main
from tests.signing_fixtures import (
    RM,
    both_rekors,
    instance_world,
    signed_paths,
    signing_instance,
    sigstore_instance,
)
from tests.sigstore_instance import SigstoreInstance

__all__ = ["signing_instance", "sigstore_instance"]  # the fixtures, imported for pytest

TAG = "3.14.1"
RELBOT = Path(sys.executable).with_name("relbot")


def sign(world_root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["sign", TAG, "--config", str(world_root / "relbot.toml"), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@both_rekors
async def test_sign_writes_three_sidecars_per_file_and_the_gate_counts_them(
    tmp_path: Path,
    signing_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, signing_instance)
    paths = signed_paths(world, world.stage(TAG))
    status = await world.say("eve", f"/status {TAG}")
    assert f"signatures: 0 of {len(paths)} files signed and valid (required)" in status.text
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", signing_instance.token(*RM))
    issued = signing_instance.certificates_issued

    code, out = sign(tmp_path, capsys)

    assert code == 0, out
    assert f"Signed {len(paths)} files of {TAG} as hugo@python.org:" in out
    assert signing_instance.certificates_issued == issued + 1  # one certificate for all
    staged = world.staged_files(TAG)
    for path in paths:
        assert {path + ".sigstore", path + ".sig", path + ".crt"} <= staged, path
    # .sig and .crt are what `sigstore sign --signature --certificate` writes: the bundle's
    # signature in base64, and its leaf certificate in PEM.
    folder = world.staging / TAG
    bundle = json.loads((folder / "Python-3.14.1.tgz.sigstore").read_text())
    sig = (folder / "Python-3.14.1.tgz.sig").read_text()
    assert sig == bundle["messageSignature"]["signature"] + "\n"
    crt = x509.load_pem_x509_certificate((folder / "Python-3.14.1.tgz.crt").read_bytes())
    raw = base64.b64decode(bundle["verificationMaterial"]["certificate"]["rawBytes"])
    assert crt == x509.load_der_x509_certificate(raw)
    # What dates the signature: Rekor v1's integrated time, or (v2, whose entries carry
    # none) the timestamp authority's RFC 3161 timestamp, taken before the entry.
    entry = bundle["verificationMaterial"]["tlogEntries"][0]
    timestamps = bundle["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"]
    if signing_instance.rekor_version == 2:
        assert entry["kindVersion"] == {"kind": "hashedrekord", "version": "0.0.2"}
        assert "integratedTime" not in entry and "inclusionPromise" not in entry
        assert len(timestamps) == 1
    else:
        assert int(entry["integratedTime"]) > 0 and timestamps == []
    # The gate verifies them with the same trust config, on its next look.
    status = await world.say("eve", f"/status {TAG}")
    assert f"signatures: {len(paths)} of {len(paths)} files signed and valid" in status.text


@both_rekors
async def test_a_second_run_signs_only_what_lacks_a_valid_signature(
    tmp_path: Path,
    signing_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, signing_instance)
    paths = signed_paths(world, world.stage(TAG))
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", signing_instance.token(*RM))
    assert sign(tmp_path, capsys)[0] == 0
    before = (world.staging / TAG / "Python-3.14.1.tar.xz.sigstore").read_bytes()
    world.write(TAG, "Python-3.14.1.tgz", b"rebuilt after signing\n")  # now a digest mismatch
    (world.staging / TAG / "python-3.14.1-macos11.pkg.sigstore").unlink()

    code, out = sign(tmp_path, capsys)

    assert code == 0, out
    assert f"Signed 2 files of {TAG}" in out
    assert "  Python-3.14.1.tgz\n" in out and "  python-3.14.1-macos11.pkg\n" in out
    assert f"Already signed: {len(paths) - 2} files." in out
    assert (world.staging / TAG / "Python-3.14.1.tar.xz.sigstore").read_bytes() == before
    status = await world.say("eve", f"/status {TAG}")
    assert f"signatures: {len(paths)} of {len(paths)} files signed and valid" in status.text


def test_nothing_to_sign_needs_no_login(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM))
    assert sign(tmp_path, capsys)[0] == 0
    monkeypatch.delenv("SIGSTORE_IDENTITY_TOKEN")
    issued = sigstore_instance.certificates_issued
    code, out = sign(tmp_path, capsys)
    assert code == 0, out
    assert f"Nothing to sign: every file of {TAG} has a valid signature." in out
    assert sigstore_instance.certificates_issued == issued


def test_a_token_for_someone_else_is_refused_before_anything_is_signed(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    before = world.staged_files(TAG)
    token = sigstore_instance.token("mallory@example.org", "https://github.com/login/oauth")
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", token)
    issued = sigstore_instance.certificates_issued
    code, out = sign(tmp_path, capsys)
    assert code == 1 and token not in out
    assert "The identity token is for mallory@example.org" in out
    assert "3.14 is signed by hugo@python.org" in out and "Nothing was signed." in out
    assert world.staged_files(TAG) == before
    assert sigstore_instance.certificates_issued == issued


def test_the_right_person_through_the_wrong_issuer_is_refused(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    monkeypatch.setenv(
        "SIGSTORE_IDENTITY_TOKEN",
        sigstore_instance.token("hugo@python.org", "https://accounts.google.com"),
    )
    code, out = sign(tmp_path, capsys)
    assert code == 1 and "(https://accounts.google.com)" in out, out
    assert not any(p.endswith(".sigstore") for p in world.staged_files(TAG))


def test_a_token_the_ca_did_not_issue_signs_nothing(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    paths = signed_paths(world, world.stage(TAG))
    with SigstoreInstance() as other:  # same claims, signed by a key this CA does not know
        monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", other.token(*RM))
    code, out = sign(tmp_path, capsys)
    assert code == 1
    assert f"Could not sign {len(paths)} files:" in out
    assert "no signing certificate" in out
    assert not any(p.endswith((".sigstore", ".sig", ".crt")) for p in world.staged_files(TAG))


def test_an_expired_token_is_one_sentence(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    instance_world(tmp_path, sigstore_instance).stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM, lifetime=-60))
    code, out = sign(tmp_path, capsys)
    assert code == 1
    assert out.startswith("relbot: No identity token from SIGSTORE_IDENTITY_TOKEN:"), out
    assert "the token has expired (at " in out, out  # not sigstore's "malformed" for it
    assert len(out.strip().splitlines()) == 1


def test_nothing_staged_is_one_sentence(
    tmp_path: Path, sigstore_instance: SigstoreInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    instance_world(tmp_path, sigstore_instance)
    code, out = sign(tmp_path, capsys)
    assert code == 1
    assert "Nothing is staged for 3.14.1" in out and "nothing to sign" in out


def test_a_plain_trusted_root_verifies_but_cannot_sign(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    sigstore_instance.write_trusted_root(tmp_path / "trust" / "instance.json")
    world.stage(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM))
    code, out = sign(tmp_path, capsys)
    assert code == 1
    assert "instance.json is a trusted root only; signing needs a client trust config" in out


def test_registered_and_signed_required_files_are_signed_nothing_else(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    world.write(TAG, "Python-3.14.1.tgz.spdx.json", "{}")  # a sidecar: never signed itself
    world.write(TAG, ".Python-3.14.1.tgz.part", "uploading")
    world.write(TAG, "amd64/core.msi", "an MSI: published, neither registered nor required")
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM))
    code, out = sign(tmp_path, capsys)
    assert code == 0, out
    staged = world.staged_files(TAG)
    assert "Python-3.14.1.tgz.spdx.json.sigstore" not in staged
    assert not any(".part." in p for p in staged)
    assert "amd64/core.msi.sigstore" not in staged
    assert "docs/python-3.14.1-docs.epub.sigstore" not in staged  # docs are not signed
    assert "python-3.14.1-aarch64-linux-android.tar.gz.sigstore" in staged  # required, signed
    assert "python-3.14.1-amd64.exe.sigstore" in staged  # registered on python.org


def test_the_out_of_band_login_pastes_a_code_into_the_terminal(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    """On a server terminal: relbot prints the provider's link, the RM opens it elsewhere and
    pastes the code back; one login signs everything."""
    world = instance_world(tmp_path, sigstore_instance)
    paths = signed_paths(world, world.stage(TAG))
    env = {k: v for k, v in os.environ.items() if k != "SIGSTORE_IDENTITY_TOKEN"}
    signer = subprocess.Popen(
        [str(RELBOT), "sign", TAG, "--oob", "--config", str(tmp_path / "relbot.toml")],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert signer.stdin is not None and signer.stderr is not None
    try:
        link = None
        for line in signer.stderr:
            if line.strip().startswith(sigstore_instance.url + "/oauth/auth?"):
                link = line.strip()
                break
        assert link is not None, "no login link printed"
        # The RM opens the link in a browser elsewhere; the provider shows a code.
        with urllib.request.urlopen(link, timeout=10) as page:
            code = page.read().decode()
        out, err = signer.communicate(code + "\n", timeout=120)
    finally:
        if signer.poll() is None:
            signer.kill()
            signer.wait()
    assert signer.returncode == 0, out + err
    assert f"Signed {len(paths)} files of {TAG} as hugo@python.org:" in out
