"""``relbot sign`` on the download-server path: staging over SFTP on a real sshd, signed by
the real sigstore-python against the private Sigstore instance. Files are hashed on the
server, never downloaded; only the small bundles are read back."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sigstore.models import ClientTrustConfig
from sigstore.oidc import IdentityToken

from bot.app import build_verifier
from bot.cli import main
from bot.config import load_config
from bot.demo import stage_demo
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.signing import files_to_sign, registered_by, sign_release
from tests.signing_fixtures import RM, signed_files, sigstore_instance
from tests.sigstore_instance import SigstoreInstance
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage

__all__ = ["sigstore_instance"]

TAG = ReleaseTag.parse("3.14.1")


def sftp_config(tmp_path: Path, sshd: SshServer, instance: SigstoreInstance) -> Path:
    staging, public = tmp_path / "srv" / "staging", tmp_path / "srv" / "public"
    instance.write_trust_config(tmp_path / "instance.json")
    config = tmp_path / "relbot.toml"
    config.write_text(
        textwrap.dedent(f"""
        [storage]
        kind = "sftp"
        host = "127.0.0.1"
        port = {sshd.port}
        user = "{sshd.user}"
        key_file = "{sshd.client_key}"
        known_hosts = "{sshd.known_hosts}"
        staging = "{staging}"
        public = "{public}"

        [signatures]
        require = true
        trusted_root = "instance.json"

        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs", "windows", "macos"]
        """)
    )
    return config


def test_relbot_sign_over_sftp_signs_every_file_in_place(
    tmp_path: Path,
    sshd: SshServer,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = sftp_config(tmp_path, sshd, sigstore_instance)
    staging = tmp_path / "srv" / "staging"
    staged = signed_files(
        load_profile("cpython"), staging / "3.14.1", stage_demo(staging, load_profile("cpython"))
    )
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", sigstore_instance.token(*RM))
    code = main(["sign", "3.14.1", "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"Signed {len(staged)} files of 3.14.1 as hugo@python.org:" in out
    for file in staged:
        for suffix in (".sigstore", ".sig", ".crt"):
            assert file.with_name(file.name + suffix).is_file(), file.name + suffix
    leftovers = [p for p in (tmp_path / "srv").rglob("*.tmp")]
    assert leftovers == []
    # The bot, on the same config, counts them all valid.
    status = main(["status", "3.14.1", "--config", str(config)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"signatures: {len(staged)} of {len(staged)} files signed and valid" in out


def test_signing_hashes_on_the_server_and_downloads_nothing(
    tmp_path: Path, sshd: SshServer, sigstore_instance: SigstoreInstance
) -> None:
    config = load_config(sftp_config(tmp_path, sshd, sigstore_instance))
    staging = tmp_path / "srv" / "staging"
    staged = signed_files(config.profile, staging / "3.14.1", stage_demo(staging, config.profile))
    storage = sftp_storage(sshd, tmp_path / "srv" / "staging", tmp_path / "srv" / "public")
    listing = storage.list_staging(TAG)
    assert listing is not None
    paths = files_to_sign(config.profile, TAG, listing, registered_by(config.profile, TAG))
    trust = ClientTrustConfig.from_json((tmp_path / "instance.json").read_text())
    outcome = sign_release(
        TAG,
        storage,
        build_verifier(config),
        lambda: trust,
        paths,
        lambda tag: RM,
        lambda: IdentityToken(sigstore_instance.token(*RM)),
        listing,
    )
    assert outcome.ok and len(outcome.signed) == len(staged)
    assert storage.requests["hash"] == 1  # every file in one command on the server
    assert storage.requests["download"] == 0
    assert storage.requests["read"] == len(staged)  # the written bundles, read back
    assert storage.requests["connect"] == 1
