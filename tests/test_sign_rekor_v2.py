"""Signing as Sigstore's public-good instance is moving to: a Rekor v2 log whose entries carry
no time and which answers an entry only once its batch is in, and an RFC 3161 timestamp
authority that dates each signature. The real sigstore-python signer and relbot's verifier
against the private instance of tests/sigstore_instance, listing v2 as the public-good one does.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from rfc3161_client import TimestampRequestBuilder, decode_timestamp_response
from rfc3161_client.base import HashAlgorithm
from sigstore.models import Bundle, ClientTrustConfig
from sigstore.oidc import IdentityToken

from bot.domain.tags import ReleaseTag
from bot.signing.signer import sign_digests
from bot.signing.verifier import SigstoreVerifier
from tests.signing_fixtures import RM
from tests.sigstore_instance import SigstoreInstance

TAG = ReleaseTag.parse("3.14.1")


@pytest.fixture(scope="module")
def v2() -> Iterator[SigstoreInstance]:
    """Batches of one second: long enough that files signed together share one."""
    with SigstoreInstance(rekor_version=2, batch_delay=1.0) as instance:
        yield instance


@pytest.fixture
def trust_file(tmp_path: Path, v2: SigstoreInstance) -> Path:
    v2.tsa_down = False
    return v2.write_trust_config(tmp_path / "instance.json")


def digests(count: int, salt: str) -> dict[str, str]:
    return {
        f"python-3.14.1-{i:02d}.zip": hashlib.sha256(f"{salt}{i}".encode()).hexdigest()
        for i in range(count)
    }


def signed(
    trust_file: Path, v2: SigstoreInstance, files: dict[str, str]
) -> tuple[dict[str, Bundle], dict[str, str]]:
    trust = ClientTrustConfig.from_json(trust_file.read_text())
    return sign_digests(trust, IdentityToken(v2.token(*RM)), files)


def test_sixty_files_share_at_most_two_batches_of_the_log(
    trust_file: Path, v2: SigstoreInstance
) -> None:
    """Signed one after another (or a few at a time), 60 files would wait for 60 (or 60 / n)
    batches of the log, seconds each, against a certificate of 10 minutes."""
    files = digests(60, "batch")
    batches, logged, issued = v2.tiles.batches, v2.tiles.size, v2.certificates_issued

    bundles, failed = signed(trust_file, v2, files)

    assert failed == {} and set(bundles) == set(files)
    assert v2.tiles.size == logged + 60
    assert v2.tiles.batches - batches <= 2
    assert v2.certificates_issued == issued + 1  # one certificate, shared by every thread
    verifier = SigstoreVerifier(str(trust_file), lambda tag: RM)
    for path, bundle in bundles.items():
        raw = bundle.to_json().encode()
        assert verifier.verify(TAG, path, files[path], raw).status.value == "valid", path


def test_each_signature_is_dated_by_the_authority_before_its_entry_is_logged(
    trust_file: Path, v2: SigstoreInstance
) -> None:
    files = digests(3, "dated")
    issued = v2.tsa.issued

    bundles, _ = signed(trust_file, v2, files)

    assert v2.tsa.issued == issued + 3
    for bundle in bundles.values():
        document = json.loads(bundle.to_json())
        entry = document["verificationMaterial"]["tlogEntries"][0]
        assert "integratedTime" not in entry and "inclusionPromise" not in entry
        (token,) = document["verificationMaterial"]["timestampVerificationData"][
            "rfc3161Timestamps"
        ]
        when = decode_timestamp_response(base64.b64decode(token["signedTimestamp"]))
        assert when.tst_info.message_imprint.message == hashlib.sha256(bundle.signature).digest()
        certificate = bundle.signing_certificate
        assert certificate.not_valid_before_utc <= when.tst_info.gen_time
        assert when.tst_info.gen_time <= certificate.not_valid_after_utc


def test_a_bundle_stripped_of_its_timestamp_has_no_signed_time(
    trust_file: Path, v2: SigstoreInstance
) -> None:
    files = digests(1, "stripped")
    (path,) = files
    bundles, _ = signed(trust_file, v2, files)
    document = json.loads(bundles[path].to_json())
    document["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] = []
    verifier = SigstoreVerifier(str(trust_file), lambda tag: RM)

    verdict = verifier.verify(TAG, path, files[path], json.dumps(document).encode())

    assert verdict.status.value == "invalid"
    assert verdict.reason == (
        "no signed time: its log entry carries none (Rekor v2) and it has no timestamp "
        "from a timestamp authority; re-sign"
    )


def test_a_root_that_does_not_list_the_authority_refuses_its_timestamps(
    tmp_path: Path, trust_file: Path, v2: SigstoreInstance
) -> None:
    files = digests(1, "foreign")
    (path,) = files
    bundles, _ = signed(trust_file, v2, files)
    root = v2.trusted_root()
    root["timestampAuthorities"] = []
    (tmp_path / "no-tsa.json").write_text(json.dumps(root))
    verifier = SigstoreVerifier(str(tmp_path / "no-tsa.json"), lambda tag: RM)

    verdict = verifier.verify(TAG, path, files[path], bundles[path].to_json().encode())

    assert verdict.status.value == "invalid"
    assert verdict.reason == (
        "wrong trust root: no timestamp authority no-tsa.json lists vouches for "
        "the bundle's timestamp"
    )


def test_without_the_timestamp_authority_each_file_is_unsigned_with_one_reason(
    trust_file: Path, v2: SigstoreInstance
) -> None:
    files = digests(4, "tsa-down")
    v2.tsa_down = True
    try:
        bundles, failed = signed(trust_file, v2, files)
    finally:
        v2.tsa_down = False

    assert bundles == {}
    assert failed == dict.fromkeys(
        files,
        "signing failed: no timestamp from the timestamp authority "
        "(a Rekor v2 log entry needs one)",
    )


def test_the_authority_rejects_a_body_that_is_no_timestamp_request(v2: SigstoreInstance) -> None:
    answer = requests.post(
        v2.tsa_url,
        data=b"not DER",
        headers={"Content-Type": "application/timestamp-query"},
        timeout=10,
    )
    reply = decode_timestamp_response(answer.content)
    assert reply.status == 2  # rejection
    assert reply.status_string == ["not a TimeStampReq: truncated DER"]
    request = TimestampRequestBuilder().hash_algorithm(HashAlgorithm.SHA256).data(b"x").build()
    granted = requests.post(v2.tsa_url, data=request.as_bytes(), timeout=10)
    assert decode_timestamp_response(granted.content).tst_info.nonce == request.nonce


def test_the_log_refuses_an_entry_whose_signature_does_not_hold(
    trust_file: Path, v2: SigstoreInstance
) -> None:
    files = digests(1, "forged")
    (path,) = files
    bundles, _ = signed(trust_file, v2, files)
    document = json.loads(bundles[path].to_json())
    body = json.loads(
        base64.b64decode(document["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"])
    )
    signature = body["spec"]["hashedRekordV002"]["signature"]
    other = hashlib.sha256(b"another file").digest()
    request = {
        "hashedRekordRequestV002": {
            "digest": base64.b64encode(other).decode(),
            "signature": signature,
        }
    }
    size = v2.tiles.size

    answer = requests.post(v2.log_url + "/api/v2/log/entries", json=request, timeout=10)

    assert answer.status_code == 400
    assert answer.json()["message"] == "the entry's signature does not verify"
    assert v2.tiles.size == size
