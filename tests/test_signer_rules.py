"""The signer's rules, pinned where a user sees them (bot/signing/signer.py).

- ``relbot sign`` reports each file once, says "1 file" for one, and adds "Nothing to sign"
  only when nothing was signed and nothing failed.
- Which files need a signature: the required files the profile signs, and every top-level
  file python.org registers (a profile without [pydotorg] rules registers nothing).
- ``sign_release`` hashes the files as they are now (never a cached digest), signs with the
  branch's signer only, and reports per file: a sidecar that appeared meanwhile, a bundle that
  cannot be read back or does not verify, a log that is down. One file's failure never stops
  the others; an outcome always names the tag, what was already signed and the signer.
- ``identity_token``: ``SIGSTORE_IDENTITY_TOKEN`` (stripped) skips the login; otherwise the
  login is out of band in an SSH session without a display, in a browser elsewhere, unless
  asked; a failure is one sentence naming where the token came from, its reason one line of
  at most 200 characters.
- ``load_signing_trust``: ``production``/``staging`` fetch that instance's trust config; a
  file is read as UTF-8 whatever the locale; what cannot be used is one exact sentence.

Everything signs for real against the private Sigstore instance of tests/sigstore_instance;
only sigstore's login (a browser or a pasted code) and the TUF fetch of Sigstore's public
trust configs are stood in for.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sigstore.errors import Error as SigstoreError
from sigstore.models import ClientTrustConfig
from sigstore.oidc import IdentityToken, IssuerError

import bot.signing.signer as signer
from bot.cli import main
from bot.domain.files import StagedFile
from bot.domain.profile import load_profile
from bot.domain.signing import SignatureResult
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RelbotError
from bot.ports import SignatureVerifier, Storage
from bot.signing.signer import (
    SigningOutcome,
    files_to_sign,
    identity_token,
    load_signing_trust,
    registered_by,
    sign_release,
)
from bot.signing.verifier import SigstoreVerifier
from bot.storage.local import LocalStorage
from tests.signing_fixtures import RM, instance_world, sigstore_instance
from tests.sigstore_instance import SigstoreInstance
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage, sshd

__all__ = ["sigstore_instance", "sshd"]  # fixtures, imported for pytest

TAG = ReleaseTag.parse("3.14.1")
TOKEN_ENV = "SIGSTORE_IDENTITY_TOKEN"
CPYTHON = load_profile("cpython")


# -- a release staged on this machine, signed through the private instance ---------------------


@dataclass
class Bench:
    """Staging and public folders of this machine, and the instance's client trust config."""

    root: Path
    instance: SigstoreInstance

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.root / "public").mkdir(exist_ok=True)
        self.instance.write_trust_config(self.trust_file)

    @property
    def folder(self) -> Path:
        return self.root / "staging" / str(TAG)

    @property
    def trust_file(self) -> Path:
        return self.root / "instance.json"

    def storage(self) -> LocalStorage:
        return LocalStorage(self.root / "staging", self.root / "public")

    def verifier(self) -> SigstoreVerifier:
        return SigstoreVerifier(str(self.trust_file), lambda tag: RM)

    def stage(self, *names: str) -> list[str]:
        for name in names:
            (self.folder / name).write_bytes(f"{name} built for {TAG}\n".encode())
        return list(names)

    def sha256(self, name: str) -> str:
        return hashlib.sha256((self.folder / name).read_bytes()).hexdigest()

    def sign(
        self,
        paths: Sequence[str],
        *,
        token: str | None = None,
        storage: Storage | None = None,
        verifier: SignatureVerifier | None = None,
        signer_of: Callable[[ReleaseTag], tuple[str, str] | None] = lambda tag: RM,
    ) -> SigningOutcome:
        """``sign_release`` on a listing taken now, as ``relbot sign`` calls it."""
        store = storage if storage is not None else self.storage()
        listing = store.list_staging(TAG)
        assert listing is not None
        trust = load_signing_trust(str(self.trust_file))
        identity = token if token is not None else self.instance.token(*RM)
        return sign_release(
            TAG,
            store,
            verifier if verifier is not None else self.verifier(),
            lambda: trust,
            paths,
            signer_of,
            lambda: IdentityToken(identity),
            listing,
        )

    def sidecars(self) -> set[str]:
        return {
            p.name for p in self.folder.iterdir() if p.name.endswith((".sig", ".crt", ".sigstore"))
        }


@pytest.fixture
def bench(tmp_path: Path, sigstore_instance: SigstoreInstance) -> Bench:
    return Bench(tmp_path, sigstore_instance)


def sign_command(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["sign", str(TAG), "--config", str(root / "relbot.toml")])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- relbot sign: the report ---------------------------------------------------------------------


def test_one_file_signed_is_reported_as_one_file_and_nothing_else(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.write(str(TAG), "Python-3.14.1.tgz", b"the source\n")
    monkeypatch.setenv(TOKEN_ENV, sigstore_instance.token(*RM))

    assert sign_command(tmp_path, capsys) == (
        0,
        "Signed 1 file of 3.14.1 as hugo@python.org:\n  Python-3.14.1.tgz\n",
        "",
    )
    assert sign_command(tmp_path, capsys) == (
        0,
        "Already signed: 1 file.\n"
        "  Python-3.14.1.tgz\n"
        "Nothing to sign: every file of 3.14.1 has a valid signature.\n",
        "",
    )


def test_files_signed_are_listed_under_one_line_and_nothing_to_sign_is_not_said(
    tmp_path: Path,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    world.write(str(TAG), "Python-3.14.1.tgz", b"the source\n")
    world.write(str(TAG), "Python-3.14.1.tar.xz", b"the source, xz\n")
    world.write(str(TAG), "docs/python-3.14.1-docs.epub", b"the docs: never signed\n")
    monkeypatch.setenv(TOKEN_ENV, sigstore_instance.token(*RM))

    assert sign_command(tmp_path, capsys) == (
        0,
        "Signed 2 files of 3.14.1 as hugo@python.org:\n"
        "  Python-3.14.1.tar.xz\n"
        "  Python-3.14.1.tgz\n",
        "",
    )


def test_a_failure_with_nothing_signed_is_not_called_nothing_to_sign() -> None:
    outcome = SigningOutcome(TAG, failed=(("a.tgz", "signing failed: the log is down"),))
    assert outcome.report() == "Could not sign 1 file:\n  a.tgz: signing failed: the log is down"
    assert not outcome.ok


# -- which files need a signature ----------------------------------------------------------------


def listing(*paths: str, regular: bool = True) -> dict[str, StagedFile]:
    return {p: StagedFile(p, 10, 1_800_000_000.0, regular=regular) for p in paths}


def test_a_registered_file_the_profile_does_not_require_is_signed_too() -> None:
    # iOS builds are required from 3.15 on; one staged for 3.14.1 is still registered.
    staged = listing(
        "Python-3.14.1.tgz",
        "python-3.14.1-iOS-XCframework.tar.gz",
        "python-3.14.1-macos12.pkg",  # stands for the required -macos11.pkg; registered
        "docs/python-3.14.1-docs.epub",
        "README.txt",
    )
    registered = registered_by(CPYTHON, TAG)

    assert files_to_sign(CPYTHON, TAG, staged, registered) == [
        "Python-3.14.1.tgz",
        "python-3.14.1-iOS-XCframework.tar.gz",
        "python-3.14.1-macos12.pkg",
    ]


def test_only_top_level_files_are_registered() -> None:
    registered = registered_by(CPYTHON, TAG)

    assert registered("python-3.14.1-amd64.exe") is True
    assert registered("python-3.14.1-old/python-3.14.1-amd64.exe") is False
    assert registered("python-3.14.1-amd64.exe.sigstore") is False  # a sidecar
    assert registered("python-3.14.0-amd64.exe") is False  # another release's file


WIDGET = """
name = "widget"
sidecars = [{ suffix = ".sig" }]

[roles.build]
required = [{ name = "widget-{tag}.tar.gz" }]
allowed = [{ name = "extras/**" }, { name = "widget-{tag}.zip" }]
"""


def test_a_profile_without_pydotorg_rules_registers_nothing(tmp_path: Path) -> None:
    (tmp_path / "widget.toml").write_text(WIDGET, encoding="utf-8")
    widget = load_profile(str(tmp_path / "widget.toml"))
    tag = ReleaseTag.parse("2.1.0")
    registered = registered_by(widget, tag)

    assert registered("widget-2.1.0.zip") is False
    staged = listing("extras/notes.txt", "widget-2.1.0.tar.gz", "widget-2.1.0.zip")
    assert files_to_sign(widget, tag, staged, registered) == ["widget-2.1.0.tar.gz"]


# -- sign_release: who signs, and what the outcome says ------------------------------------------


def test_a_branch_without_a_signer_is_one_sentence_and_nothing_is_signed(bench: Bench) -> None:
    paths = bench.stage("Python-3.14.1.tgz")

    with pytest.raises(RelbotError) as refused:
        bench.sign(paths, signer_of=lambda tag: None)

    assert str(refused.value) == (
        "No signer is configured for branch 3.14; add it to [signatures] identities. "
        "Nothing was signed."
    )
    assert bench.sidecars() == set()


def test_a_token_for_someone_else_names_who_to_log_in_as_and_through_which_issuer(
    bench: Bench,
) -> None:
    paths = bench.stage("Python-3.14.1.tgz")
    mallory = bench.instance.token("mallory@example.org", "https://accounts.google.com")

    with pytest.raises(RelbotError) as refused:
        bench.sign(paths, token=mallory)

    assert str(refused.value) == (
        "The identity token is for mallory@example.org (https://accounts.google.com); "
        "3.14 is signed by hugo@python.org (https://github.com/login/oauth). "
        "Log in as hugo@python.org through https://github.com/login/oauth. Nothing was signed."
    )
    assert bench.sidecars() == set()


def test_nothing_to_sign_names_what_is_already_signed_and_the_branch_signer(
    bench: Bench,
) -> None:
    paths = bench.stage("Python-3.14.1.tar.xz", "Python-3.14.1.tgz")
    assert bench.sign(paths).ok

    again = bench.sign(paths, token="no token is needed: none is asked for")

    assert again == SigningOutcome(TAG, already=tuple(paths), identity="hugo@python.org")
    assert again.report() == (
        "Already signed: 2 files.\n"
        "  Python-3.14.1.tar.xz\n"
        "  Python-3.14.1.tgz\n"
        "Nothing to sign: every file of 3.14.1 has a valid signature."
    )


def test_no_certificate_fails_every_pending_file_and_keeps_what_was_already_signed(
    bench: Bench,
) -> None:
    done, pending = bench.stage("Python-3.14.1.tar.xz", "Python-3.14.1.tgz")
    assert bench.sign([done]).ok
    with SigstoreInstance() as other:  # the same claims, signed by a key this CA does not know
        foreign = other.token(*RM)

    outcome = bench.sign([done, pending], token=foreign)

    assert outcome == SigningOutcome(
        TAG,
        already=(done,),
        failed=((pending, "no signing certificate (FulcioClientError)"),),
        identity="hugo@python.org",
    )
    assert outcome.report() == (
        "Already signed: 1 file.\n"
        "  Python-3.14.1.tar.xz\n"
        "Could not sign 1 file:\n"
        "  Python-3.14.1.tgz: no signing certificate (FulcioClientError)"
    )
    assert bench.sidecars() == {f"{done}{s}" for s in (".sig", ".crt", ".sigstore")}


def test_a_sidecar_that_appears_meanwhile_fails_its_file_and_the_others_are_signed(
    bench: Bench,
) -> None:
    first, *others = paths = bench.stage(
        "Python-3.14.1.tar.xz", "Python-3.14.1.tgz", "python-3.14.1-amd64.exe"
    )
    storage = bench.storage()
    listed = storage.list_staging(TAG)
    assert listed is not None
    # Someone else's signature file lands after the listing: it is not overwritten.
    (bench.folder / f"{first}.sig").write_text("someone else's signature\n")
    trust = load_signing_trust(str(bench.trust_file))

    outcome = sign_release(
        TAG,
        storage,
        bench.verifier(),
        lambda: trust,
        paths,
        lambda tag: RM,
        lambda: IdentityToken(bench.instance.token(*RM)),
        listed,
    )

    assert outcome == SigningOutcome(
        TAG,
        signed=tuple(others),
        failed=((first, f"{first}.sig already exists in {bench.folder}; not overwritten."),),
        identity="hugo@python.org",
    )
    assert (bench.folder / f"{first}.sig").read_text() == "someone else's signature\n"


class SweptAfterWriting(LocalStorage):
    """Staging where another process removes one bundle as soon as the signer wrote it."""

    def __init__(self, staging: Path, public: Path, swept: str) -> None:
        super().__init__(staging, public)
        self.swept = swept

    def write(self, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False) -> None:
        super().write(tag, path, data, replace=replace)
        if path == self.swept:
            (self.staging / str(tag) / path).unlink()


def test_a_bundle_that_cannot_be_read_back_fails_its_file_and_the_others_are_verified(
    bench: Bench,
) -> None:
    first, *others = paths = bench.stage(
        "Python-3.14.1.tar.xz", "Python-3.14.1.tgz", "python-3.14.1-amd64.exe"
    )
    storage = SweptAfterWriting(bench.root / "staging", bench.root / "public", first + ".sigstore")

    outcome = bench.sign(paths, storage=storage)

    gone = bench.folder / f"{first}.sigstore"
    assert outcome == SigningOutcome(
        TAG,
        signed=tuple(others),
        failed=(
            (first, f"written, but it cannot be read back: Cannot read {gone}: no such file."),
        ),
        identity="hugo@python.org",
    )


def test_a_written_bundle_that_does_not_verify_is_a_failure_with_the_verifier_s_reason(
    bench: Bench, tmp_path: Path
) -> None:
    paths = bench.stage("Python-3.14.1.tar.xz", "Python-3.14.1.tgz")
    with SigstoreInstance() as other:  # the gate trusts another instance than the one signing
        other.write_trust_config(tmp_path / "other.json")
    elsewhere = SigstoreVerifier(str(tmp_path / "other.json"), lambda tag: RM)

    outcome = bench.sign(paths, verifier=elsewhere)

    why = (
        "written, but it does not verify: "
        "wrong trust root: its transparency log is not in other.json"
    )
    assert outcome == SigningOutcome(
        TAG, failed=tuple((p, why) for p in paths), identity="hugo@python.org"
    )
    assert not outcome.ok


def test_a_log_down_fails_every_file_with_the_first_line_of_why_cut_at_200_characters(
    tmp_path: Path,
) -> None:
    with SigstoreInstance() as instance:
        bench = Bench(tmp_path, instance)
        paths = bench.stage("Python-3.14.1.tar.xz", "Python-3.14.1.tgz")
        port = instance.log_url.rsplit(":", 1)[1]
        instance.stop_log()

        outcome = bench.sign(paths)

    assert (outcome.signed, outcome.already, outcome.identity) == ((), (), "hugo@python.org")
    assert [p for p, _ in outcome.failed] == paths
    start = (
        f"signing failed: HTTPConnectionPool(host='127.0.0.1', port={port}): "
        "Max retries exceeded with url: /api/v1/log/entries"
    )
    for _, why in outcome.failed:
        assert why.startswith(start) and why.endswith("…"), why
        assert len(why) == len("signing failed: ") + 200, why
    assert bench.sidecars() == set()


@dataclass
class RecordingVerifier:
    """The real verifier, remembering what it was asked: (path, sha256, bundle given)."""

    inner: SigstoreVerifier
    asked: list[tuple[str, str, bool]] = field(default_factory=list)

    def verify(
        self, tag: ReleaseTag, path: str, sha256: str, bundle: bytes | None
    ) -> SignatureResult:
        self.asked.append((path, sha256, bundle is not None))
        return self.inner.verify(tag, path, sha256, bundle)


def test_each_file_is_verified_as_itself_before_signing_and_after_writing(bench: Bench) -> None:
    paths = bench.stage("Python-3.14.1.tar.xz", "Python-3.14.1.tgz")
    verifier = RecordingVerifier(bench.verifier())

    assert bench.sign(paths, verifier=verifier).signed == tuple(paths)

    before = [(p, bench.sha256(p), False) for p in paths]
    after = [(p, bench.sha256(p), True) for p in paths]
    assert verifier.asked == before + after


def test_a_file_changed_since_the_scan_is_signed_as_it_is_now(
    tmp_path: Path, sshd: SshServer, sigstore_instance: SigstoreInstance
) -> None:
    """Over SFTP a digest is reused while size and mtime are unchanged; signing hashes
    afresh, so a file rewritten with the same size and mtime is signed as it is now."""
    bench = Bench(tmp_path, sigstore_instance)
    file = bench.folder / "Python-3.14.1.tgz"
    file.write_bytes(b"first build\n")
    storage = sftp_storage(sshd, tmp_path / "staging", tmp_path / "public")
    assert storage.list_staging(TAG) is not None
    scanned = storage.digest(TAG, ["Python-3.14.1.tgz"])  # the gate's scan: now cached
    stamp = file.stat()
    file.write_bytes(b"other build\n")  # the same size, the same mtime
    os.utime(file, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    now = hashlib.sha256(b"other build\n").hexdigest()
    assert scanned == {"Python-3.14.1.tgz": hashlib.sha256(b"first build\n").hexdigest()}

    outcome = bench.sign(["Python-3.14.1.tgz"], storage=storage)

    assert outcome.signed == ("Python-3.14.1.tgz",), outcome
    bundle = (bench.folder / "Python-3.14.1.tgz.sigstore").read_bytes()
    verdict = bench.verifier().verify(TAG, "Python-3.14.1.tgz", now, bundle)
    assert (verdict.status.value, verdict.reason) == ("valid", "")


# -- identity_token ------------------------------------------------------------------------------


@dataclass
class Login:
    """Stands in for sigstore's ``Issuer`` (a browser login, or a code pasted back): records
    the provider it was made for and whether the login was out of band; answers ``answer``
    (a token) or raises it."""

    answer: str | Exception
    providers: list[str] = field(default_factory=list)
    out_of_band: list[object] = field(default_factory=list)

    def __call__(self, url: str) -> Login:
        self.providers.append(url)
        return self

    def identity_token(self, force_oob: bool = False) -> IdentityToken:
        self.out_of_band.append(force_oob)
        if isinstance(self.answer, Exception):
            raise self.answer
        return IdentityToken(self.answer)


@pytest.fixture
def trust(tmp_path: Path, sigstore_instance: SigstoreInstance) -> ClientTrustConfig:
    return load_signing_trust(str(sigstore_instance.write_trust_config(tmp_path / "i.json")))


@pytest.fixture
def login(monkeypatch: pytest.MonkeyPatch, sigstore_instance: SigstoreInstance) -> Login:
    """sigstore's login, stood in for: it answers a token for the branch's signer."""
    double = Login(sigstore_instance.token(*RM))
    monkeypatch.setattr(signer, "Issuer", double)
    return double


def test_the_token_in_the_environment_is_used_stripped_and_no_login_is_made(
    trust: ClientTrustConfig, login: Login, sigstore_instance: SigstoreInstance
) -> None:
    raw = sigstore_instance.token("hugo@python.org", "https://github.com/login/oauth")

    token = identity_token(trust, env={TOKEN_ENV: f"  {raw}\n", "SSH_CONNECTION": "10.0.0.1 22"})

    assert (token.identity, token.federated_issuer) == RM
    assert (login.providers, login.out_of_band) == ([], [])


@pytest.mark.parametrize(
    ("env", "oob", "out_of_band"),
    [
        ({}, None, False),  # a desktop session: the browser
        ({"SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22"}, None, True),
        ({"SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22", "DISPLAY": ":0"}, None, False),
        (
            {"SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22", "WAYLAND_DISPLAY": "wayland-0"},
            None,
            False,
        ),
        ({"SSH_CONNECTION": ""}, None, False),
        ({"DISPLAY": ":0"}, None, False),
        ({TOKEN_ENV: "   "}, None, False),  # a blank token is no token
        ({}, True, True),  # --oob
        ({"SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22"}, False, False),
    ],
)
def test_the_login_is_out_of_band_in_an_ssh_session_without_a_display_unless_asked(
    trust: ClientTrustConfig,
    login: Login,
    sigstore_instance: SigstoreInstance,
    env: dict[str, str],
    oob: bool | None,
    out_of_band: bool,
) -> None:
    token = identity_token(trust, oob=oob, env=env)

    assert (token.identity, token.federated_issuer) == RM
    assert login.providers == [sigstore_instance.issuer_url]  # the instance's OIDC provider
    assert len(login.out_of_band) == 1 and login.out_of_band[0] is out_of_band


def test_a_token_in_the_environment_that_is_no_token_is_named_as_such(
    trust: ClientTrustConfig, login: Login
) -> None:
    with pytest.raises(RelbotError) as refused:
        identity_token(trust, env={TOKEN_ENV: "not-a-jwt"})

    assert str(refused.value) == (
        "No identity token from SIGSTORE_IDENTITY_TOKEN: "
        "Identity token is malformed or missing claims."
    )
    assert login.providers == []


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            "The provider refused the login.\nTraceback (most recent call last):",
            "The provider refused the login.",
        ),
        ("\n  access_denied  \n", "access_denied"),
        ("", "IssuerError"),  # nothing to say: its kind
        ("x" * 200, "x" * 200),
        ("x" * 201, "x" * 199 + "…"),
        ("y" * 500, "y" * 199 + "…"),
    ],
)
def test_a_failed_login_is_one_sentence_naming_the_login_and_the_first_line_of_why(
    trust: ClientTrustConfig, login: Login, error: str, reason: str
) -> None:
    login.answer = IssuerError(error)

    with pytest.raises(RelbotError) as refused:
        identity_token(trust, env={})

    assert str(refused.value) == f"No identity token from the login: {reason}."


def test_a_failed_login_after_a_blank_token_variable_names_the_login(
    trust: ClientTrustConfig, login: Login
) -> None:
    login.answer = IssuerError("access_denied")

    with pytest.raises(RelbotError) as refused:
        identity_token(trust, env={"SIGSTORE_IDENTITY_TOKEN": "  \n"})

    assert str(refused.value) == "No identity token from the login: access_denied."


# -- load_signing_trust --------------------------------------------------------------------------


@dataclass
class PublicTrust:
    """Stands in for ``ClientTrustConfig``'s fetch of Sigstore's public instances (TUF):
    answers a trust config per instance, or raises ``fails``."""

    production_trust: ClientTrustConfig
    staging_trust: ClientTrustConfig
    fails: Exception | None = None

    def production(self) -> ClientTrustConfig:
        if self.fails is not None:
            raise self.fails
        return self.production_trust

    def staging(self) -> ClientTrustConfig:
        if self.fails is not None:
            raise self.fails
        return self.staging_trust


@pytest.fixture
def public_trust(
    monkeypatch: pytest.MonkeyPatch, sigstore_instance: SigstoreInstance
) -> PublicTrust:
    text = json.dumps(sigstore_instance.trust_config())
    double = PublicTrust(ClientTrustConfig.from_json(text), ClientTrustConfig.from_json(text))
    monkeypatch.setattr(signer, "ClientTrustConfig", double)
    return double


def test_production_and_staging_are_each_their_own_instance(public_trust: PublicTrust) -> None:
    assert load_signing_trust("production") is public_trust.production_trust
    assert load_signing_trust("staging") is public_trust.staging_trust


@pytest.mark.parametrize("setting", ["production", "staging"])
def test_a_public_trust_config_that_cannot_be_fetched_is_one_sentence(
    public_trust: PublicTrust, setting: str
) -> None:
    public_trust.fails = SigstoreError("TUF refresh failed: no route to host\nmore detail")

    with pytest.raises(ConfigError) as refused:
        load_signing_trust(setting)

    assert str(refused.value) == (
        f"Cannot fetch Sigstore {setting}'s trust config (TUF refresh failed: no route to host)."
    )


def test_a_trust_config_that_is_not_json_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")

    with pytest.raises(ConfigError) as refused:
        load_signing_trust(str(tmp_path / "broken.json"))

    assert str(refused.value) == (
        "signatures.trusted_root: cannot read broken.json "
        "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))."
    )


def test_a_plain_trusted_root_cannot_sign(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    sigstore_instance.write_trusted_root(tmp_path / "root.json")

    with pytest.raises(ConfigError) as refused:
        load_signing_trust(str(tmp_path / "root.json"))

    assert str(refused.value) == (
        "signatures.trusted_root: root.json is a trusted root only; signing needs a client "
        "trust config (trusted root + signing config) naming the CA and log."
    )


def test_a_trust_config_is_read_as_utf_8_whatever_the_locale(
    tmp_path: Path, sigstore_instance: SigstoreInstance, ascii_locale: None
) -> None:
    document = sigstore_instance.trust_config()
    for service in document["signingConfig"]["caUrls"]:
        service["operator"] = "relbot tests, Malmö"
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")

    trust = load_signing_trust(str(path))

    assert trust.signing_config.get_oidc_url() == sigstore_instance.issuer_url
