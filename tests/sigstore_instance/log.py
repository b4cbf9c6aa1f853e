"""The transparency log of the test Sigstore instance: Rekor v1's ``POST /api/v1/log/entries``.

Entries go into an RFC 6962 Merkle tree; each answer carries an inclusion proof against the
tree as it is after the entry, a signed checkpoint (a "signed note" whose signature line starts
with the first 4 bytes of the log id, as sigstore-python matches it) and a signed entry timestamp
over the RFC 8785 canonical ``{body, integratedTime, logID, logIndex}``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from typing import Any

import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from tests.sigstore_instance.ca import key_id


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def tree_hash(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) of RFC 6962 over leaf hashes."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)  # largest power of two < n
    return _node_hash(tree_hash(leaves[:k]), tree_hash(leaves[k:]))


def inclusion_path(index: int, leaves: list[bytes]) -> list[bytes]:
    """PATH(m, D[n]) of RFC 6962, bottom-up."""
    if len(leaves) <= 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if index < k:
        return [*inclusion_path(index, leaves[:k]), tree_hash(leaves[k:])]
    return [*inclusion_path(index - k, leaves[k:]), tree_hash(leaves[:k])]


class TransparencyLog:
    """An append-only log; thread-safe (the HTTP server answers in threads)."""

    def __init__(self, origin: str = "relbot-test-rekor") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.log_id = key_id(self.key.public_key())
        self.origin = origin
        self._leaves: list[bytes] = []
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        with self._lock:
            return len(self._leaves)

    def append(self, proposed: dict[str, Any]) -> dict[str, Any]:
        """Integrate a proposed entry; the Rekor v1 answer ``{uuid: entry}``."""
        body = rfc8785.dumps(proposed)
        leaf = leaf_hash(body)
        with self._lock:
            self._leaves.append(leaf)
            index = len(self._leaves) - 1
            leaves = list(self._leaves)
        root = tree_hash(leaves)
        proof = inclusion_path(index, leaves)
        integrated = int(time.time())
        body_b64 = base64.b64encode(body).decode()
        set_payload = rfc8785.dumps(
            {
                "body": body_b64,
                "integratedTime": integrated,
                "logID": self.log_id.hex(),
                "logIndex": index,
            }
        )
        entry = {
            "body": body_b64,
            "integratedTime": integrated,
            "logID": self.log_id.hex(),
            "logIndex": index,
            "verification": {
                "inclusionProof": {
                    "checkpoint": self._checkpoint(len(leaves), root),
                    "hashes": [h.hex() for h in proof],
                    "logIndex": index,
                    "rootHash": root.hex(),
                    "treeSize": len(leaves),
                },
                "signedEntryTimestamp": base64.b64encode(self._sign(set_payload)).decode(),
            },
        }
        return {leaf.hex(): entry}

    def _checkpoint(self, size: int, root: bytes) -> str:
        note = f"{self.origin}\n{size}\n{base64.b64encode(root).decode()}\n"
        signature = base64.b64encode(self.log_id[:4] + self._sign(note.encode())).decode()
        return f"{note}\n\u2014 {self.origin} {signature}\n"

    def _sign(self, data: bytes) -> bytes:
        return self.key.sign(data, ec.ECDSA(hashes.SHA256()))


def proposed_entry(raw: bytes) -> dict[str, Any]:
    """The JSON body of a POST, or ValueError."""
    document = json.loads(raw)
    if not isinstance(document, dict) or document.get("kind") != "hashedrekord":
        raise ValueError("only hashedrekord entries are accepted")
    return document
