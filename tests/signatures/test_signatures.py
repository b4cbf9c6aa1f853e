"""SigstoreVerifier against real Sigstore bundles, with the network cut and an empty home."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sigstore.models import Bundle, InvalidBundle
from sigstore.verify import Verifier

from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError
from bot.ports import SignatureResult, SignatureStatus
from bot.signing.verifier import SigstoreVerifier

DATA = Path(__file__).parent.parent / "data" / "sigstore"
TAG = ReleaseTag.parse("3.14.1")

GITHUB_OAUTH = "https://github.com/login/oauth"
GOOGLE = "https://accounts.google.com"
WILLIAM = ("william@yossarian.net", GITHUB_OAUTH)
JKU = ("jku@goto.fi", GITHUB_OAUTH)
RFC8785_RELEASE = (
    "https://github.com/trailofbits/rfc8785.py/.github/workflows/release.yml@refs/tags/v0.1.2",
    "https://token.actions.githubusercontent.com",
)
THOMAS = ("thomas@python.org", GOOGLE)


@dataclass(frozen=True)
class Signed:
    """A test artifact with its bundle, the root it verifies under and who signed it."""

    artifact: str
    bundle: str
    root: str
    signer: tuple[str, str]

    @property
    def sha256(self) -> str:
        return hashlib.sha256((DATA / self.artifact).read_bytes()).hexdigest()

    @property
    def bundle_bytes(self) -> bytes:
        return (DATA / self.bundle).read_bytes()


STAGING_V3 = Signed("bundle_v3.txt", "bundle_v3.txt.sigstore", "staging", WILLIAM)
STAGING_V3_ALT = Signed("bundle_v3_alt.txt", "bundle_v3_alt.txt.sigstore", "staging", WILLIAM)
STAGING_REKOR_V2 = Signed(
    "staging-rekor-v2.txt", "staging-rekor-v2.txt.sigstore.json", "staging", JKU
)
PRODUCTION_GITHUB = Signed(
    "bundle_v3_github.whl", "bundle_v3_github.whl.sigstore", "production", RFC8785_RELEASE
)
ALL_SIGNED = [STAGING_V3, STAGING_V3_ALT, STAGING_REKOR_V2, PRODUCTION_GITHUB]


class NetworkBlocked(AssertionError):
    pass


@dataclass(frozen=True)
class Sandbox:
    home: Path

    def written(self) -> list[Path]:
        return sorted(path for path in self.home.rglob("*") if path.is_file())


@pytest.fixture(autouse=True)
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """Every test runs without network and with an empty home; nothing may be written there."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NetworkBlocked(f"network access attempted: {args[1:]!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: refuse(None, *args))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for variable, folder in [
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_STATE_HOME", ".local/state"),
    ]:
        monkeypatch.setenv(variable, str(home / folder))
    box = Sandbox(home)
    yield box
    assert box.written() == [], "verification wrote to the user's cache or data directories"


def verifier_for(root: str, signer: tuple[str, str] | None) -> SigstoreVerifier:
    return SigstoreVerifier(trusted_root=root, signers=lambda tag: signer)


def check(
    signed: Signed,
    *,
    root: str | None = None,
    signer: tuple[str, str] | None = None,
    sha256: str | None = None,
    bundle: bytes | None = None,
) -> SignatureResult:
    verifier = verifier_for(root or signed.root, signer or signed.signer)
    return verifier.verify(
        TAG,
        signed.artifact,
        sha256 or signed.sha256,
        bundle if bundle is not None else signed.bundle_bytes,
    )


# --- what the sandbox itself guarantees (so that the tests below can fail) ----------------


def test_the_sandbox_blocks_the_network() -> None:
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_the_sandbox_notices_sigstores_own_offline_cache(sandbox: Sandbox) -> None:
    # sigstore's offline mode copies its embedded root into the user cache: the reason we pin
    # our own. The sandbox must see that write, or the no-cache check below proves nothing.
    Verifier.production(offline=True)
    written = sandbox.written()
    assert any(path.name == "trusted_root.json" for path in written)
    for path in written:
        path.unlink()


# --- accepted ------------------------------------------------------------------------------


def test_staging_bundle_is_valid_with_the_staging_root_and_its_signer() -> None:
    result = check(STAGING_V3)

    assert result == SignatureResult("bundle_v3.txt", SignatureStatus.VALID)


def test_rekor_v2_staging_bundle_is_valid() -> None:
    assert check(STAGING_REKOR_V2).status is SignatureStatus.VALID


def test_production_github_workflow_bundle_is_valid_with_the_production_root() -> None:
    assert check(PRODUCTION_GITHUB).status is SignatureStatus.VALID


@pytest.mark.parametrize("signed", ALL_SIGNED, ids=lambda signed: signed.bundle)
def test_every_test_bundle_verifies_under_its_own_root(signed: Signed) -> None:
    assert check(signed).status is SignatureStatus.VALID


def test_an_uppercase_sha256_is_accepted() -> None:
    assert check(STAGING_V3, sha256=STAGING_V3.sha256.upper()).status is SignatureStatus.VALID


def test_trusted_root_given_as_a_path_works(tmp_path: Path) -> None:
    pinned = Path(__file__).parents[2] / "bot" / "data" / "trusted_roots" / "staging.json"
    root_file = tmp_path / "trusted_root.json"
    root_file.write_bytes(pinned.read_bytes())

    verifier = verifier_for(str(root_file), WILLIAM)

    assert verifier.trust_root == "trusted_root.json"
    result = verifier.verify(TAG, "bundle_v3.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes)
    assert result.status is SignatureStatus.VALID


# --- rejected, each with a reason a release manager can act on ---------------------------


def test_wrong_identity_is_rejected_naming_expected_and_found() -> None:
    result = check(STAGING_V3, signer=("hugo@python.org", GITHUB_OAUTH))

    assert result.status is SignatureStatus.INVALID
    assert result.reason == "wrong signer: expected hugo@python.org, found william@yossarian.net"


def test_wrong_issuer_is_rejected_naming_expected_and_found() -> None:
    result = check(STAGING_V3, signer=("william@yossarian.net", GOOGLE))

    assert result.status is SignatureStatus.INVALID
    assert result.reason == (
        f"wrong issuer for william@yossarian.net: expected {GOOGLE}, found {GITHUB_OAUTH}"
    )


@pytest.mark.parametrize(
    ("signed", "root", "reason"),
    [
        (PRODUCTION_GITHUB, "staging", "signed with Sigstore production, checked against staging"),
        (STAGING_V3, "production", "signed with Sigstore staging, checked against production"),
        (
            STAGING_REKOR_V2,
            "production",
            "signed with Sigstore staging, checked against production",
        ),
    ],
    ids=["production-bundle-staging-root", "staging-bundle-production-root", "rekor-v2"],
)
def test_a_bundle_from_the_other_trust_root_is_rejected(
    signed: Signed, root: str, reason: str
) -> None:
    result = check(signed, root=root)

    assert result.status is SignatureStatus.INVALID
    assert result.reason == f"wrong trust root: {reason}"


def test_a_custom_trust_root_is_named_by_its_file(tmp_path: Path) -> None:
    production = Path(__file__).parents[2] / "bot" / "data" / "trusted_roots" / "production.json"
    root_file = tmp_path / "private_root.json"
    root_file.write_bytes(production.read_bytes())

    result = verifier_for(str(root_file), WILLIAM).verify(
        TAG, "bundle_v3.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes
    )

    assert result.status is SignatureStatus.INVALID
    assert result.reason == (
        "wrong trust root: signed with Sigstore staging, checked against private_root.json"
    )


def test_a_transparency_log_no_pinned_root_knows_is_rejected() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    entry = document["verificationMaterial"]["tlogEntries"][0]
    entry["logId"]["keyId"] = base64.b64encode(hashlib.sha256(b"elsewhere").digest()).decode()

    result = check(STAGING_V3, bundle=json.dumps(document).encode())

    assert result.status is SignatureStatus.INVALID
    assert result.reason == "wrong trust root: its transparency log is not in staging"


@pytest.mark.parametrize(
    "signed", [STAGING_V3, STAGING_REKOR_V2, PRODUCTION_GITHUB], ids=lambda s: s.bundle
)
def test_one_flipped_artifact_byte_is_a_digest_mismatch(signed: Signed) -> None:
    content = bytearray((DATA / signed.artifact).read_bytes())
    content[len(content) // 2] ^= 0x01
    changed = hashlib.sha256(content).hexdigest()

    result = check(signed, sha256=changed)

    assert result.status is SignatureStatus.INVALID
    assert result.reason == (
        "digest mismatch: the file changed after it was signed "
        f"(signed {signed.sha256[:12]}…, file {changed[:12]}…)"
    )


def test_a_bundle_of_another_file_is_a_digest_mismatch() -> None:
    result = check(STAGING_V3, bundle=STAGING_V3_ALT.bundle_bytes)

    assert result.status is SignatureStatus.INVALID
    assert result.reason.startswith("digest mismatch:")


def test_a_tampered_signature_is_rejected() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    signature = bytearray(base64.b64decode(document["messageSignature"]["signature"]))
    signature[-1] ^= 0x01
    document["messageSignature"]["signature"] = base64.b64encode(signature).decode()

    result = check(STAGING_V3, bundle=json.dumps(document).encode())

    assert result.status is SignatureStatus.INVALID
    assert result.reason == "bad signature: the bundle's signature does not match the file"


def without_its_digest(signed: Signed) -> bytes:
    """The bundle without the digest it records (optional in the format): only the signature
    over the file's digest is left to tell a changed file."""
    document = json.loads(signed.bundle_bytes)
    del document["messageSignature"]["messageDigest"]
    return json.dumps(document).encode()


def test_a_bundle_that_records_no_digest_still_names_a_changed_file() -> None:
    assert check(STAGING_V3, bundle=without_its_digest(STAGING_V3)).status is (
        SignatureStatus.VALID
    )

    result = check(STAGING_V3, sha256="ab" * 32, bundle=without_its_digest(STAGING_V3))

    assert result == SignatureResult(
        STAGING_V3.artifact,
        SignatureStatus.INVALID,
        "digest mismatch: the file changed after it was signed",
    )


def test_a_certificate_from_a_ca_the_root_does_not_trust_is_named(tmp_path: Path) -> None:
    """The transparency log is the root's own, its certificate authorities are not the ones
    that issued the signer's certificate (a private root written from two instances, or a
    pinned root older than a rotation of the CA)."""
    roots = Path(__file__).parents[2] / "bot" / "data" / "trusted_roots"
    mixed = json.loads((roots / "staging.json").read_text())
    production = json.loads((roots / "production.json").read_text())
    mixed["certificateAuthorities"] = production["certificateAuthorities"]
    root_file = tmp_path / "mixed_root.json"
    root_file.write_text(json.dumps(mixed))

    result = check(STAGING_V3, root=str(root_file))

    assert result.reason == (
        "wrong trust root: the certificate does not chain to mixed_root.json (or the pinned "
        "root is out of date)"
    )


def test_a_digest_recorded_under_another_algorithm_is_named_in_sigstores_words() -> None:
    """sigstore compares the digest a bundle records only when it names SHA-256; for another
    algorithm the bot has no digest of its own to show, so sigstore's reason is passed on."""
    document = json.loads(STAGING_V3.bundle_bytes)
    document["messageSignature"]["messageDigest"]["algorithm"] = "SHA2_384"

    result = check(STAGING_V3, sha256="ab" * 32, bundle=json.dumps(document).encode())

    assert result.reason == "verification failed: Bundle message digest mismatch"


def test_a_recorded_digest_with_a_stray_character_is_read_as_sigstore_reads_it() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    recorded = document["messageSignature"]["messageDigest"]["digest"]
    document["messageSignature"]["messageDigest"]["digest"] = recorded[:-4] + "!" + recorded[-4:]

    result = check(STAGING_V3, sha256="ab" * 32, bundle=json.dumps(document).encode())

    assert result.reason == (
        "digest mismatch: the file changed after it was signed "
        f"(signed {STAGING_V3.sha256[:12]}…, file {'ab' * 6}…)"
    )


def test_the_old_v0_1_python_bundle_is_rejected_as_too_old() -> None:
    raw = (DATA / "Python-3.12.5.tgz.sigstore").read_bytes()
    # The fact this test is about: sigstore 4 refuses to load it at all.
    with pytest.raises(InvalidBundle, match="inclusion proof, with checkpoint"):
        Bundle.from_json(raw)

    verifier = verifier_for("production", THOMAS)
    result = verifier.verify(TAG, "Python-3.12.5.tgz", "ab" * 32, raw)

    assert result.status is SignatureStatus.INVALID
    assert result.reason == (
        "too-old bundle format (v0.1, no inclusion proof with checkpoint); re-sign with a "
        "current sigstore"
    )


@pytest.mark.parametrize(
    "raw", [b'{"mediaType":', b'  {"mediaType": "x", '], ids=["at-a-colon", "indented"]
)
def test_a_bundle_cut_short_anywhere_is_named_truncated(raw: bytes) -> None:
    result = check(STAGING_V3, bundle=raw)

    assert result.reason == "malformed bundle: truncated (the JSON ends early)"


def test_a_truncated_bundle_is_malformed() -> None:
    raw = STAGING_V3.bundle_bytes

    result = check(STAGING_V3, bundle=raw[: len(raw) // 2])

    assert result.status is SignatureStatus.INVALID
    assert result.reason == "malformed bundle: truncated (the JSON ends early)"


@pytest.mark.parametrize(
    "raw",
    [b"<html><body>404 Not Found</body></html>", b"", b"\xff\xfe\x00garbage", b"}{"],
    ids=["html", "empty", "binary", "braces"],
)
def test_a_non_json_bundle_is_malformed(raw: bytes) -> None:
    result = check(STAGING_V3, bundle=raw)

    assert result.status is SignatureStatus.INVALID
    assert result.reason == "malformed bundle: not JSON"


@pytest.mark.parametrize("raw", [b"[1, 2]", b'{"hello": "world"}', b"null"])
def test_json_that_is_not_a_bundle_is_malformed(raw: bytes) -> None:
    result = check(STAGING_V3, bundle=raw)

    assert result.status is SignatureStatus.INVALID
    assert result.reason == "malformed bundle: JSON, but not a Sigstore bundle (no mediaType)"


def test_a_bundle_missing_a_field_names_the_field() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    del document["verificationMaterial"]

    result = check(STAGING_V3, bundle=json.dumps(document).encode())

    assert result.status is SignatureStatus.INVALID
    assert result.reason == "malformed bundle: verificationMaterial: Field required"


def test_a_bundle_without_its_log_entry_is_malformed_in_sigstores_words() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    document["verificationMaterial"]["tlogEntries"] = []

    result = check(STAGING_V3, bundle=json.dumps(document).encode())

    assert result.reason == "malformed bundle: expected exactly one log entry in bundle"


def test_a_log_entry_of_a_version_sigstore_cannot_check_is_unsupported() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    document["verificationMaterial"]["tlogEntries"][0]["kindVersion"]["version"] = "9.9.9"

    result = check(STAGING_V3, bundle=json.dumps(document).encode())

    assert result.reason == (
        "unsupported bundle: Expected log entry version 0.0.1 - 0.0.2, got 9.9.9"
    )


def test_a_bundle_with_a_broken_certificate_is_malformed() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    document["verificationMaterial"]["certificate"]["rawBytes"] = base64.b64encode(
        b"not a certificate"
    ).decode()

    result = check(STAGING_V3, bundle=json.dumps(document).encode())

    assert result.status is SignatureStatus.INVALID
    assert result.reason == (  # cryptography's words, the first line
        "malformed bundle: error parsing asn1 value: ParseError { kind: ShortData { needed: 96 } }"
    )


def test_an_unknown_bundle_format_is_named() -> None:
    document = json.loads(STAGING_V3.bundle_bytes)
    document["mediaType"] = "application/vnd.dev.sigstore.bundle.v9.9+json"

    result = check(STAGING_V3, bundle=json.dumps(document).encode())

    assert result.status is SignatureStatus.INVALID
    assert result.reason == (
        "unsupported bundle format 'application/vnd.dev.sigstore.bundle.v9.9+json'"
    )


def test_a_missing_bundle_is_missing_and_names_the_sidecar() -> None:
    verifier = verifier_for("production", THOMAS)

    result = verifier.verify(TAG, "Python-3.14.1.tgz", "ab" * 32, None)

    assert result == SignatureResult(
        "Python-3.14.1.tgz", SignatureStatus.MISSING, "no Python-3.14.1.tgz.sigstore"
    )


def test_a_branch_without_a_signer_is_invalid() -> None:
    verifier = verifier_for("staging", None)

    result = verifier.verify(TAG, "bundle_v3.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes)

    assert result == SignatureResult(
        "bundle_v3.txt",
        SignatureStatus.INVALID,
        "no signer configured for branch 3.14 (add it to [signatures] identities)",
    )


def test_the_signer_is_asked_for_the_tag_being_verified() -> None:
    asked: list[ReleaseTag] = []

    def signers(tag: ReleaseTag) -> tuple[str, str] | None:
        asked.append(tag)
        return WILLIAM if tag.branch == "3.14" else None

    verifier = SigstoreVerifier(trusted_root="staging", signers=signers)
    other = ReleaseTag.parse("3.13.9")

    assert verifier.verify(TAG, "a", STAGING_V3.sha256, STAGING_V3.bundle_bytes).status is (
        SignatureStatus.VALID
    )
    assert verifier.verify(other, "a", STAGING_V3.sha256, STAGING_V3.bundle_bytes).status is (
        SignatureStatus.INVALID
    )
    assert asked == [TAG, other]


def test_a_sha256_that_is_not_hex_is_a_caller_bug() -> None:
    verifier = verifier_for("staging", WILLIAM)

    with pytest.raises(ValueError, match="SHA-256"):
        verifier.verify(TAG, "bundle_v3.txt", "not-a-digest", STAGING_V3.bundle_bytes)


# --- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["no-such-root", "prod"])
def test_an_unknown_trusted_root_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError) as refused:
        verifier_for(name, WILLIAM)

    assert str(refused.value) == (
        f"signatures.trusted_root: {name!r} is neither 'production' nor 'staging' nor a file."
    )


def test_a_trusted_root_without_transparency_logs_is_a_config_error(tmp_path: Path) -> None:
    roots = Path(__file__).parents[2] / "bot" / "data" / "trusted_roots"
    root = json.loads((roots / "staging.json").read_text())
    root["tlogs"] = []
    root_file = tmp_path / "root.json"
    root_file.write_text(json.dumps(root))

    with pytest.raises(ConfigError) as refused:
        verifier_for(str(root_file), WILLIAM)

    assert str(refused.value) == (
        "signatures.trusted_root: trusted root contains no transparency log instances."
    )


def test_a_trusted_root_file_that_is_not_json_names_the_first_problem(tmp_path: Path) -> None:
    root_file = tmp_path / "root.json"
    root_file.write_bytes(b"not json")

    with pytest.raises(ConfigError) as refused:
        verifier_for(str(root_file), WILLIAM)

    assert str(refused.value) == (
        "signatures.trusted_root: root.json is not a usable trusted_root.json or client trust "
        "config (Expecting value: line 1 column 1 (char 0))."
    )


@pytest.mark.parametrize("content", [b"not json", b'{"mediaType": "something/else"}'])
def test_a_trusted_root_file_that_is_not_a_root_is_a_config_error(
    tmp_path: Path, content: bytes
) -> None:
    root_file = tmp_path / "root.json"
    root_file.write_bytes(content)

    with pytest.raises(ConfigError, match=r"signatures\.trusted_root: root\.json is not a usable"):
        verifier_for(str(root_file), WILLIAM)


# --- cache and threads -----------------------------------------------------------------------


@pytest.fixture
def sigstore_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts real sigstore verifications (the real method still runs)."""
    calls: list[str] = []
    original: Callable[..., None] = Verifier.verify_artifact

    def counting(self: Verifier, *args: Any, **kwargs: Any) -> None:
        calls.append("verify_artifact")
        original(self, *args, **kwargs)

    monkeypatch.setattr(Verifier, "verify_artifact", counting)
    return calls


def test_a_result_is_cached_and_not_verified_again(sigstore_calls: list[str]) -> None:
    verifier = verifier_for("staging", WILLIAM)

    first = verifier.verify(TAG, "bundle_v3.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes)
    again = verifier.verify(TAG, "bundle_v3.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes)

    assert first == again == SignatureResult("bundle_v3.txt", SignatureStatus.VALID)
    assert sigstore_calls == ["verify_artifact"]
    info = verifier.cache_info()
    assert (info.hits, info.misses, info.size) == (1, 1, 1)


def test_a_cached_failure_keeps_its_reason(sigstore_calls: list[str]) -> None:
    verifier = verifier_for("staging", ("hugo@python.org", GITHUB_OAUTH))

    results = [
        verifier.verify(TAG, "bundle_v3.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes)
        for _ in range(3)
    ]

    assert len(sigstore_calls) == 1
    assert len(set(results)) == 1
    assert results[0].reason.startswith("wrong signer:")


def test_the_cache_key_covers_bundle_artifact_and_signer(sigstore_calls: list[str]) -> None:
    signer = {"3.14": WILLIAM, "3.15": ("hugo@python.org", GITHUB_OAUTH)}
    verifier = SigstoreVerifier("staging", lambda tag: signer.get(tag.branch))
    bundle, sha = STAGING_V3.bundle_bytes, STAGING_V3.sha256

    verifier.verify(TAG, "a.txt", sha, bundle)
    verifier.verify(TAG, "b.txt", sha, bundle)  # same content under another name: cached
    verifier.verify(TAG, "a.txt", STAGING_V3_ALT.sha256, bundle)  # other artifact
    verifier.verify(TAG, "a.txt", sha, STAGING_V3_ALT.bundle_bytes)  # other bundle
    verifier.verify(ReleaseTag.parse("3.15.0"), "a.txt", sha, bundle)  # other signer

    assert len(sigstore_calls) == 4
    assert verifier.cache_info().hits == 1


def test_a_result_cached_for_one_issuer_is_not_taken_for_another(
    sigstore_calls: list[str],
) -> None:
    """One person, two branches, two logins: what is valid through one issuer is not
    through the other, whatever was verified first."""
    signer = {"3.14": WILLIAM, "3.15": ("william@yossarian.net", GOOGLE)}
    verifier = SigstoreVerifier("staging", lambda tag: signer.get(tag.branch))
    bundle, sha = STAGING_V3.bundle_bytes, STAGING_V3.sha256

    first = verifier.verify(TAG, "a.txt", sha, bundle)
    other = verifier.verify(ReleaseTag.parse("3.15.0"), "a.txt", sha, bundle)

    assert first.status is SignatureStatus.VALID
    assert other.reason == (
        f"wrong issuer for william@yossarian.net: expected {GOOGLE}, found {GITHUB_OAUTH}"
    )
    assert len(sigstore_calls) == 2


def test_the_cache_keeps_the_newest_results_within_its_limit(
    sigstore_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.signing.verifier._CACHE_LIMIT", 2)
    verifier = verifier_for("staging", WILLIAM)
    looks = [
        (STAGING_V3.sha256, STAGING_V3.bundle_bytes),
        (STAGING_V3_ALT.sha256, STAGING_V3_ALT.bundle_bytes),
        (STAGING_V3.sha256, without_its_digest(STAGING_V3)),
    ]
    for sha, bundle in looks:
        assert verifier.verify(TAG, "a.txt", sha, bundle).status is SignatureStatus.VALID
    assert verifier.cache_info().size == 2

    verifier.verify(TAG, "a.txt", *looks[2])  # the newest: still cached
    verifier.verify(TAG, "a.txt", *looks[0])  # the oldest: dropped, verified again

    assert len(sigstore_calls) == 4
    info = verifier.cache_info()
    assert (info.hits, info.misses, info.size) == (1, 4, 2)


def test_a_cached_result_carries_the_path_asked_for() -> None:
    verifier = verifier_for("staging", WILLIAM)
    verifier.verify(TAG, "a.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes)

    result = verifier.verify(TAG, "b.txt", STAGING_V3.sha256, STAGING_V3.bundle_bytes)

    assert result.path == "b.txt"


def test_verification_from_worker_threads_gives_the_same_answers() -> None:
    verifier = SigstoreVerifier(
        "staging",
        lambda tag: {"3.14": WILLIAM, "3.15": JKU}.get(tag.branch),
    )
    jobs = [
        (TAG, STAGING_V3, SignatureStatus.VALID),
        (TAG, STAGING_V3_ALT, SignatureStatus.VALID),
        (ReleaseTag.parse("3.15.0"), STAGING_REKOR_V2, SignatureStatus.VALID),
        (ReleaseTag.parse("3.15.0"), STAGING_V3, SignatureStatus.INVALID),
    ] * 8

    def run(job: tuple[ReleaseTag, Signed, SignatureStatus]) -> bool:
        tag, signed, expected = job
        result = verifier.verify(tag, signed.artifact, signed.sha256, signed.bundle_bytes)
        return result.status is expected

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(run, jobs))
    info = verifier.cache_info()
    assert info.size == 4
    assert info.hits + info.misses == len(jobs)
