"""``[signatures] trusted_root`` naming a client trust config (a private Sigstore instance):
its trusted root verifies; a broken one is one sentence at start-up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.signing.signer import load_signing_trust
from bot.signing.verifier import SigstoreVerifier
from tests.sigstore_instance import SigstoreInstance


def test_a_client_trust_config_with_a_broken_trusted_root_is_refused(tmp_path: Path) -> None:
    with SigstoreInstance() as instance:
        document = instance.trust_config()
    document["trustedRoot"]["mediaType"] = "application/vnd.example+json"
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(document))
    with pytest.raises(
        ConfigError, match=r"instance.json is not a usable trusted_root.json or client trust config"
    ):
        SigstoreVerifier(str(path), lambda tag: None)


def test_a_signing_config_without_a_ca_cannot_sign(tmp_path: Path) -> None:
    with SigstoreInstance() as instance:
        document = instance.trust_config()
    document["signingConfig"]["caUrls"] = []
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(document))
    SigstoreVerifier(str(path), lambda tag: None)  # verifying needs only the trusted root
    with pytest.raises(
        ConfigError, match=r"instance.json is not a usable client trust config \(No valid Fulcio CA"
    ):
        load_signing_trust(str(path))
