"""Signature verdicts, as readiness shows them (the verification itself is a port)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.tags import ReleaseTag

BUNDLE_SUFFIX = ".sigstore"


class SignatureStatus(StrEnum):
    VALID = "valid"
    MISSING = "missing"
    INVALID = "invalid"


@dataclass(frozen=True)
class SignatureResult:
    """The verdict on one file's ``FILE.sigstore`` bundle; ``reason`` says why when invalid
    (wrong signer, wrong issuer, digest mismatch, malformed or too-old bundle)."""

    path: str
    status: SignatureStatus
    reason: str = ""

    def describe(self) -> str:
        return f"{self.path}: {self.reason or self.status.value}"


def sign_command(tag: ReleaseTag, config_file: str | None) -> str:
    """The line a release manager runs to sign what ``tag`` still lacks (``relbot sign``)."""
    line = f"relbot sign {tag}"
    return f"{line} --config {shlex.quote(config_file)}" if config_file else line
