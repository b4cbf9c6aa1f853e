"""The Rekor v2 log of the test Sigstore instance (rekor-tiles' ``POST /api/v2/log/entries``).

As rekor-tiles does it: a submission waits until its entry is in the log; entries arriving
within one batching window are integrated together when the window closes (one checkpoint per
batch); the answer is a TransparencyLogEntry of kind ``hashedrekord`` 0.0.2 with an inclusion
proof against that checkpoint and nothing else: no integrated time, no inclusion promise (so a
bundle's time must come from a timestamp authority). The checkpoint is a C2SP signed note by
an Ed25519 key; the log id is the note key's hash (SHA-256 of origin, newline, 0x01, key), whose
first 4 bytes start the signature line, as sigstore-python matches them.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

import rfc8785
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, utils

from tests.sigstore_instance.log import inclusion_path, leaf_hash, tree_hash

KEY_DETAILS = "PKIX_ECDSA_P256_SHA_256"  # the only signing keys the instance's CA certifies


@dataclass
class _Pending:
    """An entry waiting for its batch: the handler thread waits on ``done``."""

    body: bytes
    done: threading.Event = field(default_factory=threading.Event)
    answer: dict[str, Any] | None = None


class TiledLog:
    """An append-only log integrating batches after ``batch_delay`` seconds; thread-safe."""

    def __init__(self, origin: str = "relbot-test-rekor-v2", batch_delay: float = 0.2) -> None:
        self.key = ed25519.Ed25519PrivateKey.generate()
        raw = self.key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.origin = origin
        self.log_id = hashlib.sha256(origin.encode() + b"\n\x01" + raw).digest()
        self.batch_delay = batch_delay
        self.batches = 0  # how many checkpoints were published
        self._leaves: list[bytes] = []
        self._pending: list[_Pending] = []
        self._timer: threading.Timer | None = None
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        with self._lock:
            return len(self._leaves)

    def queue(self, request: dict[str, Any]) -> _Pending:
        """Check a CreateEntryRequest and add its entry to the open batch (ValueError for a
        request the log refuses, TimeoutError when the log is stopped)."""
        pending = _Pending(rfc8785.dumps(entry_body(request)))
        with self._lock:
            if self._stopped:
                raise TimeoutError("the log is stopped")
            self._pending.append(pending)
            if self._timer is None:  # the first entry of a batch opens its window
                self._timer = threading.Timer(self.batch_delay, self._integrate)
                self._timer.daemon = True
                self._timer.start()
        return pending

    @staticmethod
    def wait(pending: _Pending, timeout: float = 30.0) -> dict[str, Any]:
        """The integrated entry once its batch is in (TimeoutError if the log stopped)."""
        if not pending.done.wait(timeout) or pending.answer is None:
            raise TimeoutError("the log stopped before the entry's batch was integrated")
        return pending.answer

    def submit(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.wait(self.queue(request))

    def _integrate(self) -> None:
        with self._lock:
            batch, self._pending, self._timer = self._pending, [], None
            first = len(self._leaves)
            self._leaves.extend(leaf_hash(p.body) for p in batch)
            leaves = list(self._leaves)
            self.batches += 1
        root = tree_hash(leaves)
        checkpoint = self._checkpoint(len(leaves), root)
        for index, pending in enumerate(batch, start=first):
            pending.answer = {
                "logIndex": str(index),
                "logId": {"keyId": _b64(self.log_id)},
                "kindVersion": {"kind": "hashedrekord", "version": "0.0.2"},
                "inclusionProof": {
                    "logIndex": str(index),
                    "rootHash": _b64(root),
                    "treeSize": str(len(leaves)),
                    "hashes": [_b64(h) for h in inclusion_path(index, leaves)],
                    "checkpoint": {"envelope": checkpoint},
                },
                "canonicalizedBody": _b64(pending.body),
            }
            pending.done.set()

    def _checkpoint(self, size: int, root: bytes) -> str:
        note = f"{self.origin}\n{size}\n{_b64(root)}\n"
        signature = _b64(self.log_id[:4] + self.key.sign(note.encode()))
        return f"{note}\n\u2014 {self.origin} {signature}\n"

    def stop(self) -> None:
        """The log stops: the batch still open is dropped (its submitters get no entry) and
        nothing is taken until :meth:`start`."""
        with self._lock:
            self._stopped = True
            timer, self._timer = self._timer, None
            batch, self._pending = self._pending, []
        if timer is not None:
            timer.cancel()
        for pending in batch:
            pending.done.set()

    def start(self) -> None:
        with self._lock:
            self._stopped = False


def entry_body(request: dict[str, Any]) -> dict[str, Any]:
    """The log entry a CreateEntryRequest for a hashed rekord 0.0.2 makes, once its signature
    is checked against the certificate's key; ValueError otherwise."""
    if not isinstance(request, dict) or set(request) != {"hashedRekordRequestV002"}:
        raise ValueError("only hashedRekordRequestV002 entries are accepted")
    spec = request["hashedRekordRequestV002"]
    digest = base64.b64decode(spec["digest"], validate=True)
    signature = spec["signature"]
    verifier = signature["verifier"]
    if verifier.get("keyDetails") != KEY_DETAILS:
        raise ValueError(f"unsupported keyDetails {verifier.get('keyDetails')!r}")
    certificate = x509.load_der_x509_certificate(
        base64.b64decode(verifier["x509Certificate"]["rawBytes"], validate=True)
    )
    key = certificate.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey) or len(digest) != 32:
        raise ValueError("an ECDSA P-256 key and a SHA-256 digest are expected")
    try:
        key.verify(
            base64.b64decode(signature["content"], validate=True),
            digest,
            ec.ECDSA(utils.Prehashed(hashes.SHA256())),
        )
    except InvalidSignature as err:
        raise ValueError("the entry's signature does not verify") from err
    return {
        "apiVersion": "0.0.2",
        "kind": "hashedrekord",
        "spec": {
            "hashedRekordV002": {
                "data": {"algorithm": "SHA2_256", "digest": _b64(digest)},
                "signature": {
                    "content": signature["content"],
                    "verifier": {
                        "keyDetails": KEY_DETAILS,
                        "x509Certificate": {"rawBytes": verifier["x509Certificate"]["rawBytes"]},
                    },
                },
            }
        },
    }


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
