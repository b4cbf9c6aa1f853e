"""``relbot sign`` on the download-server path: staging over SFTP on a real sshd, signed by
the real sigstore-python against the private Sigstore instance. Files are hashed on the
server, never downloaded; only the small bundles are read back."""

from __future__ import annotations

import textwrap
import urllib.request
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
from bot.signing.signer import files_to_sign, registered_by, sign_release
from bot.storage.sftp import SftpStorage
from tests.conftest import World
from tests.signing_fixtures import RM, signed_files, signed_paths, sigstore_instance
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


class SftpWorld(World):
    """World's team, with staging and public reached over SFTP on the test's sshd."""

    def __init__(self, root: Path, sshd: SshServer, extra_toml: str) -> None:
        self._sshd = sshd
        super().__init__(root, extra_toml)

    def make_storage(self) -> SftpStorage:  # type: ignore[override]
        self.public.mkdir(parents=True, exist_ok=True)
        return sftp_storage(self._sshd, self.staging, self.public)


async def test_signing_at_the_confirmation_over_sftp_writes_beside_the_frozen_files(
    tmp_path: Path, sshd: SshServer, sigstore_instance: SigstoreInstance
) -> None:
    sigstore_instance.login_as = RM
    sigstore_instance.write_trust_config(tmp_path / "instance.json")
    world = SftpWorld(
        tmp_path, sshd, '[signatures]\nrequire = true\ntrusted_root = "instance.json"\n'
    )
    paths = signed_paths(world, world.stage("3.14.1"))
    await world.ready_all("3.14.1")
    plan = await world.say("hugo", "/publish 3.14.1")
    assert plan.confirm is not None and plan.confirm.login_url is not None, plan.text
    with urllib.request.urlopen(plan.confirm.login_url, timeout=10) as page:
        login = page.read().decode().strip()
    storage = world.storage
    assert isinstance(storage, SftpStorage)
    downloads_before = storage.requests["download"]

    done = await world.say("hugo", plan.confirm.with_login(login))

    assert done.text.startswith("Published 3.14.1:"), done.text
    public = world.public_files()
    for path in paths:
        for suffix in ("", ".sig", ".crt", ".sigstore"):
            assert f"3.14.1/{path}{suffix}" in public, path + suffix
    assert storage.requests["download"] == downloads_before  # signed digests, read nothing
    assert not list((tmp_path / "data").rglob("*.tmp"))
