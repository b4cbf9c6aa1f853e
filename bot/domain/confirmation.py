"""When a confirmation code is valid: the one rule behind ``/publish TAG confirm CODE``.

A code is valid only for the plan it was issued with, only for the RM it was issued to, and
only until it expires; a code that was spent (used, superseded, withdrawn) says why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from bot.domain.history import Offer


class CodeFault(Enum):
    UNKNOWN = "unknown"  # never issued for this release
    SPENT = "spent"  # issued once, no longer valid (``why`` says how)
    NOT_YOURS = "not_yours"  # issued to someone else (``holder``)
    EXPIRED = "expired"  # past ``expired_at``


@dataclass(frozen=True)
class CodeProblem:
    """Why a code is refused, with what the refusal names."""

    fault: CodeFault
    why: str = ""  # SPENT: what spent it
    holder: str = ""  # NOT_YOURS: who it was issued to
    expired_at: float = 0.0  # EXPIRED: when


def hash_code(code: str) -> str:
    """Codes are stored hashed: the audit trail never shows a usable code."""
    return hashlib.sha256(code.encode()).hexdigest()


def check_code(
    offer: Offer | None,
    spent: Mapping[str, str],
    code_hash: str,
    person: str,
    now: float,
) -> CodeProblem | None:
    """None when ``person`` may confirm ``offer`` with the code hashing to ``code_hash`` at
    ``now``; else the problem. ``spent`` maps spent codes' hashes to why they were spent."""
    if offer is None or offer.code_hash != code_hash:
        why = spent.get(code_hash)
        if why is not None:
            return CodeProblem(CodeFault.SPENT, why=why)
        return CodeProblem(CodeFault.UNKNOWN)
    if offer.person != person:
        return CodeProblem(CodeFault.NOT_YOURS, holder=offer.person)
    if now > offer.expires_at:
        return CodeProblem(CodeFault.EXPIRED, expired_at=offer.expires_at)
    return None


def login_refusal(tag: str, to_sign: int, login: str | None) -> str | None:
    """Why a confirmation with (or without) ``login`` is refused before anything else is
    checked; None when it fits the plan. A plan that signs ``to_sign`` files needs the code
    of the Sigstore login; a plan that signs nothing takes none. The code stays valid."""
    if to_sign and login is None:
        files = "1 file" if to_sign == 1 else f"{to_sign} files"
        return (
            f"This plan signs {files} at the confirmation: open the plan's login link, log in, "
            f"and type /publish {tag} confirm <code> <login> with the code the page shows."
        )
    if not to_sign and login is not None:
        return (
            f"This plan signs nothing, so it takes no login code; type /publish {tag} "
            "confirm <code> alone."
        )
    return None
