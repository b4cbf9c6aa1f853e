"""Sigstore verification of staged files, offline, against a trusted root pinned in the package.

A release manager signs each file with ``python3 -m sigstore sign --bundle F.sigstore F``;
:class:`SigstoreVerifier` checks ``F.sigstore`` against the SHA-256 that storage computed for
``F`` (the file itself is never read here) and the (identity, issuer) expected for the tag's
branch, and says in one short phrase why a bundle is not good enough.

Over 400 lines because loading the pinned root, reading the bundle and certificate, and
explaining a refusal are one verification, and its helpers are private to it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ObjectIdentifier
from sigstore.errors import CertValidationError, Error, VerificationError
from sigstore.hashes import Hashed
from sigstore.models import (
    Bundle,
    ClientTrustConfig,
    IncompatibleEntry,
    InvalidBundle,
    TrustedRoot,
)
from sigstore.verify import Verifier
from sigstore.verify.policy import Identity
from sigstore_models.common.v1 import HashAlgorithm

from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError
from bot.ports import SignatureResult, SignatureStatus

__all__ = [
    "PINNED_ROOTS",
    "UNDATED",
    "CacheInfo",
    "SigstoreVerifier",
    "first_line",
    "is_client_trust_config",
]

_logger = logging.getLogger(__name__)

#: Names of the trusted roots shipped in ``bot/data/trusted_roots/``.
PINNED_ROOTS = ("production", "staging")

# Fulcio puts the OIDC issuer in this extension; sigstore's Identity policy checks it.
_OIDC_ISSUER_OID = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
# Fulcio's "other name" SAN for identities that are neither e-mails nor URIs.
_OTHERNAME_OID = ObjectIdentifier("1.3.6.1.4.1.57264.1.7")
_SHA256_RE = re.compile(r"[0-9a-fA-F]{64}")
_BUNDLE_V01 = "application/vnd.dev.sigstore.bundle+json;version=0.1"
_CLIENT_TRUST_CONFIG = "application/vnd.dev.sigstore.clienttrustconfig"
_KNOWN_MEDIA_TYPES = frozenset(kind.value for kind in Bundle.BundleType)
# Results are tiny, but a long-running bot sees many bundles: keep the newest ones.
_CACHE_LIMIT = 4096
_REASON_LIMIT = 160  # characters of an error kept in a reason
# How sigstore says a bundle has no time it can trust. A Rekor v2 entry carries none (no
# integrated time, no inclusion promise): its time is the timestamp authority's.
UNDATED = "inclusion promise or signed timestamp"
_NO_AUTHORITIES = "no Timestamp Authorities have been provided"
_TOO_FEW_TIMES = "not enough sources of verified time"
_NO_TIME = (
    "no signed time: its log entry carries none (Rekor v2) and it has no timestamp from a "
    "timestamp authority; re-sign"
)


@dataclass(frozen=True)
class CacheInfo:
    """Counters of :meth:`SigstoreVerifier.cache_info`; ``misses`` counts real verifications."""

    hits: int
    misses: int
    size: int


@dataclass(frozen=True)
class _Verdict:
    status: SignatureStatus
    reason: str = ""


@dataclass(frozen=True)
class _CacheKey:
    """What a verdict depends on, besides the trusted root (one per verifier and its cache)."""

    bundle_sha256: str
    artifact_sha256: str
    identity: str
    issuer: str


@dataclass(frozen=True)
class _Root:
    """A loaded trusted root with what the error messages need to know about it."""

    label: str  # "production", "staging" or the file's name
    trusted_root: TrustedRoot
    log_ids: frozenset[bytes]  # key ids of the transparency logs it trusts


class SigstoreVerifier:
    """Verifies ``FILE.sigstore`` bundles offline; implements :class:`bot.ports.SignatureVerifier`.

    ``trusted_root`` is ``"production"``, ``"staging"`` (the roots pinned in this package) or
    the path of a ``trusted_root.json`` or of a client trust config (a private instance's
    trusted root and signing config, whose trusted root is used). ``signers`` gives the
    (identity, issuer) expected for a tag's branch, or None when nobody is configured. No
    network and no cache directory are used. Safe to call from several worker threads.

    Raises :class:`bot.errors.ConfigError` if the trusted root cannot be loaded.
    """

    def __init__(
        self,
        trusted_root: str,
        signers: Callable[[ReleaseTag], tuple[str, str] | None],
    ) -> None:
        self._root = _load_root(trusted_root)
        self._signers = signers
        try:
            self._verifier = Verifier(trusted_root=self._root.trusted_root)
        except VerificationError as err:  # a root without transparency logs
            raise ConfigError(f"signatures.trusted_root: {err}.") from err
        self._lock = threading.Lock()
        self._cache: dict[_CacheKey, _Verdict] = {}
        self._hits = 0
        self._misses = 0

    @property
    def trust_root(self) -> str:
        """The trusted root in use, for messages: ``production``, ``staging`` or a file name."""
        return self._root.label

    def verify(
        self, tag: ReleaseTag, path: str, sha256: str, bundle: bytes | None
    ) -> SignatureResult:
        """Check ``bundle`` (the content of ``path + ".sigstore"``) against the file's SHA-256.

        Returns VALID, MISSING (``bundle`` is None) or INVALID with a short reason. Never
        raises for a bad bundle; raises ``ValueError`` if ``sha256`` is not 64 hex digits
        (a bug of the caller, not of the staged files).
        """
        if bundle is None:
            return SignatureResult(path, SignatureStatus.MISSING, f"no {path}.sigstore")
        if not _SHA256_RE.fullmatch(sha256):
            raise ValueError(f"not a hex SHA-256 digest: {sha256!r}")
        signer = self._signers(tag)
        if signer is None:
            return SignatureResult(
                path,
                SignatureStatus.INVALID,
                f"no signer configured for branch {tag.branch} (add it to [signatures] identities)",
            )
        identity, issuer = signer
        key = _CacheKey(
            bundle_sha256=hashlib.sha256(bundle).hexdigest(),
            artifact_sha256=sha256.lower(),
            identity=identity,
            issuer=issuer,
        )
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._hits += 1
                return SignatureResult(path, cached.status, cached.reason)
        # Verify outside the lock: threads checking different files must not queue.
        verdict = self._check(bundle, bytes.fromhex(sha256), identity, issuer)
        with self._lock:
            self._misses += 1
            self._cache[key] = verdict
            while len(self._cache) > _CACHE_LIMIT:
                del self._cache[next(iter(self._cache))]  # the oldest entry
        return SignatureResult(path, verdict.status, verdict.reason)

    def cache_info(self) -> CacheInfo:
        """How often a result came from the cache (``hits``) or was verified (``misses``)."""
        with self._lock:
            return CacheInfo(hits=self._hits, misses=self._misses, size=len(self._cache))

    def _check(self, raw: bytes, digest: bytes, identity: str, issuer: str) -> _Verdict:
        try:
            document: object = json.loads(raw)
        except ValueError as err:  # JSONDecodeError, or bytes that are not text at all
            return _invalid(f"malformed bundle: {_json_problem(err)}")
        media_type = _dig(document, "mediaType")
        if not isinstance(media_type, str):
            return _invalid("malformed bundle: JSON, but not a Sigstore bundle (no mediaType)")
        if media_type not in _KNOWN_MEDIA_TYPES:
            return _invalid(f"unsupported bundle format {media_type!r}")
        try:
            bundle = Bundle.from_json(raw)
        except IncompatibleEntry as err:
            return _invalid(f"unsupported bundle: {first_line(err, _REASON_LIMIT)}")
        except InvalidBundle as err:
            if media_type == _BUNDLE_V01:
                # sigstore 4 wants an inclusion proof with a checkpoint, which v0.1 bundles
                # (sigstore-python < 2) did not carry.
                return _invalid(
                    "too-old bundle format (v0.1, no inclusion proof with checkpoint); "
                    "re-sign with a current sigstore"
                )
            if UNDATED in str(err):
                return _invalid(_NO_TIME)
            return _invalid(f"malformed bundle: {_pydantic_summary(err)}")
        except ValueError as err:  # e.g. a certificate that is not DER
            return _invalid(f"malformed bundle: {first_line(err, _REASON_LIMIT)}")

        hashed = Hashed(algorithm=HashAlgorithm.SHA2_256, digest=digest)
        try:
            self._verifier.verify_artifact(
                hashed, bundle, Identity(identity=identity, issuer=issuer)
            )
        except VerificationError as err:
            _logger.debug("sigstore verification failed: %s", err)
            return _invalid(self._explain(err, document, bundle, digest, identity, issuer))
        except (Error, ValueError, x509.ExtensionNotFound) as err:
            # Structurally broken material that sigstore's parser let through.
            return _invalid(f"malformed bundle: {first_line(err, _REASON_LIMIT)}")
        return _Verdict(SignatureStatus.VALID)

    def _explain(
        self,
        err: VerificationError,
        document: object,
        bundle: Bundle,
        digest: bytes,
        identity: str,
        issuer: str,
    ) -> str:
        """Turn a failed verification into the reason a release manager can act on.

        Checked in the order sigstore verifies, so the reason is the step that failed: the
        trust root, then the signer (a certificate's claims mean nothing before its chain
        holds), then the file's digest.
        """
        root = self._root
        log_id = _b64(_dig(document, "verificationMaterial", "tlogEntries", 0, "logId", "keyId"))
        if log_id is not None and log_id not in root.log_ids:
            other = next((name for name in PINNED_ROOTS if log_id in _pinned_log_ids(name)), None)
            if other is not None:
                return (
                    f"wrong trust root: signed with Sigstore {other}, checked against {root.label}"
                )
            return f"wrong trust root: its transparency log is not in {root.label}"
        if _NO_AUTHORITIES in str(err) or _TOO_FEW_TIMES in str(err):
            return (
                f"wrong trust root: no timestamp authority {root.label} lists vouches for "
                "the bundle's timestamp"
            )
        if isinstance(err, CertValidationError):
            return (
                f"wrong trust root: the certificate does not chain to {root.label} "
                "(or the pinned root is out of date)"
            )

        certificate = bundle.signing_certificate
        found_identities = _identities(certificate)
        if identity not in found_identities:
            found = ", ".join(sorted(found_identities)) or "no identity"
            return f"wrong signer: expected {identity}, found {found}"
        found_issuer = _issuer(certificate)
        if found_issuer != issuer:
            return (
                f"wrong issuer for {identity}: expected {issuer}, "
                f"found {found_issuer or 'no issuer'}"
            )

        signed = _signed_digest(document)
        if (signed is not None and signed != digest) or (
            signed is None and "invalid for input" in str(err)
        ):
            shown = f" (signed {signed.hex()[:12]}…, file {digest.hex()[:12]}…)" if signed else ""
            return f"digest mismatch: the file changed after it was signed{shown}"
        if "invalid for input" in str(err):
            return "bad signature: the bundle's signature does not match the file"
        return f"verification failed: {first_line(err, _REASON_LIMIT)}"


def _invalid(reason: str) -> _Verdict:
    return _Verdict(SignatureStatus.INVALID, reason)


def _load_root(name_or_path: str) -> _Root:
    """Load a pinned root by name or a ``trusted_root.json`` by path; ConfigError if unusable."""
    if name_or_path in PINNED_ROOTS:
        resource = resources.files("bot").joinpath("data", "trusted_roots", f"{name_or_path}.json")
        with resources.as_file(resource) as file:
            return _read_root(file, name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(
            f"signatures.trusted_root: {name_or_path!r} is neither "
            f"{' nor '.join(repr(name) for name in PINNED_ROOTS)} nor a file."
        )
    return _read_root(path, path.name)


def _read_root(file: Path, label: str) -> _Root:
    try:
        text = file.read_bytes()
        document: object = json.loads(text)
        if is_client_trust_config(document):
            # A private instance's trusted root + signing config: verify with its root.
            trusted_root = ClientTrustConfig.from_json(text.decode()).trusted_root
            document = _dig(document, "trustedRoot")
        else:
            trusted_root = TrustedRoot.from_file(str(file))
    except (OSError, ValueError, RecursionError, Error) as err:
        raise ConfigError(
            f"signatures.trusted_root: {label} is not a usable trusted_root.json "
            f"or client trust config ({first_line(err, _REASON_LIMIT)})."
        ) from err
    tlogs = _dig(document, "tlogs")
    ids = (
        _b64(_dig(tlog, "logId", "keyId")) for tlog in (tlogs if isinstance(tlogs, list) else [])
    )
    return _Root(
        label=label,
        trusted_root=trusted_root,
        log_ids=frozenset(key for key in ids if key is not None),
    )


@cache
def _pinned_log_ids(name: str) -> frozenset[bytes]:
    """Log ids of a pinned root, to name the Sigstore instance a foreign bundle came from."""
    return _load_root(name).log_ids


def is_client_trust_config(document: object) -> bool:
    """Whether a parsed JSON document is a ClientTrustConfig (trusted root + signing config)."""
    media_type = _dig(document, "mediaType")
    return isinstance(media_type, str) and media_type.startswith(_CLIENT_TRUST_CONFIG)


def _dig(node: object, *steps: str | int) -> object:
    """``node[a][b]...`` through JSON dicts and lists, or None where the path does not exist."""
    for step in steps:
        if isinstance(step, str) and isinstance(node, dict):
            node = node.get(step)
        elif isinstance(step, int) and isinstance(node, list) and -len(node) <= step < len(node):
            node = node[step]
        else:
            return None
    return node


def _b64(value: object) -> bytes | None:
    """Base64 read as sigstore's own parser reads the bundle: characters outside the alphabet
    are skipped, so the digest shown is the one sigstore compared."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value)
    except binascii.Error:
        return None


def _signed_digest(document: object) -> bytes | None:
    """The SHA-256 the bundle says it signed, if it records one."""
    message_digest = _dig(document, "messageSignature", "messageDigest")
    if _dig(message_digest, "algorithm") != "SHA2_256":
        return None
    return _b64(_dig(message_digest, "digest"))


def _identities(certificate: x509.Certificate) -> set[str]:
    """The certificate's SAN identities, as sigstore's ``Identity`` policy matches them."""
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    found = set(san.get_values_for_type(x509.RFC822Name))
    found.update(san.get_values_for_type(x509.UniformResourceIdentifier))
    found.update(
        name.value.decode(errors="replace")
        for name in san.get_values_for_type(x509.OtherName)
        if name.type_id == _OTHERNAME_OID
    )
    return found


def _issuer(certificate: x509.Certificate) -> str | None:
    """The OIDC issuer Fulcio recorded in the certificate."""
    try:
        extension = certificate.extensions.get_extension_for_oid(_OIDC_ISSUER_OID).value
    except x509.ExtensionNotFound:
        return None
    if isinstance(extension, x509.UnrecognizedExtension):
        return extension.value.decode(errors="replace")
    return None


def _json_problem(err: ValueError) -> str:
    if isinstance(err, json.JSONDecodeError):
        ends_early = err.pos >= len(err.doc.rstrip()) or err.msg.startswith("Unterminated")
        if ends_early and err.doc.lstrip().startswith("{"):
            return "truncated (the JSON ends early)"
    return "not JSON"


def _pydantic_summary(err: Exception) -> str:
    """First field error of sigstore's wrapped pydantic message (``loc: message``)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if len(lines) >= 3 and "validation error" in lines[0]:
        return f"{lines[1]}: {lines[2].split(' [type=')[0]}"
    return first_line(err, _REASON_LIMIT)


def first_line(err: BaseException, limit: int) -> str:
    """An error as a reason people read: its first line (its type's name when it says
    nothing), cut to ``limit`` characters."""
    text = str(err).strip().splitlines()
    line = text[0] if text else type(err).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"
