"""Signatures in the domain: the verdicts readiness shows (the verification itself is a port)
and whether a release needs signatures at all."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag

BUNDLE_SUFFIX = ".sigstore"
# What ``sigstore sign --signature F.sig --certificate F.crt --bundle F.sigstore`` writes,
# in the order the bot writes them: the bundle (what the gate checks) last.
SIDECARS = (".sig", ".crt", BUNDLE_SUFFIX)


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


def signatures_required(require: bool | None, profile: Profile, tag: ReleaseTag) -> bool:
    """Whether ``tag``'s signed files need a valid signature: ``[signatures] require`` when
    the config sets it (``false`` is an explicit opt-out), else what the profile says."""
    return profile.requires_signatures(tag) if require is None else require


def opt_out_warning(require: bool | None, profile: Profile) -> str | None:
    """What ``relbot check`` warns about when the config turns signatures off."""
    if require is not False:
        return None
    since = profile.spec.signatures_since
    wanted = f" (the {profile.name} profile requires them from {since} on)" if since else ""
    return (
        f"signatures.require = false: releases are published without Sigstore signatures"
        f"{wanted}; remove the line to sign every file python.org lists at /publish."
    )
