"""What blocks a publish, as the bot last saw the release: readiness's own blockers
(``Readiness.blockers``: missing, unclaimed, held, unsigned, uploading) plus what the gate
knows besides (no RM, published or publishing already, never listed, files changed after
``/ready``). python.org's objection is asked last, by the caller, only when this is empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.domain.files import Listing, changed_since
from bot.domain.history import ReleaseState
from bot.domain.readiness import Readiness


def publish_blockers(
    state: ReleaseState,
    rms: Sequence[str],
    listing: Listing | None,
    readiness: Readiness | None,
    digests: Mapping[str, str],
) -> list[str]:
    """Why ``/publish`` would refuse now, from what was last seen (no I/O): ``listing`` and
    ``readiness`` are None before staging was first listed; ``digests`` hold the hashes of
    files unchanged since they were hashed. Empty: nothing known blocks."""
    tag = state.tag
    blockers = [] if rms else [f"no release manager is configured for {tag.branch}"]
    if state.is_published:
        return [*blockers, f"{tag} is already published"]
    if state.publishing is not None:
        return [*blockers, f"{tag} is being published right now"]
    if listing is None or readiness is None:
        return [*blockers, "staging has not been listed yet"]
    blockers += readiness.blockers
    for role, claim in state.claims.items():  # /publish withdraws these claims first
        if changed := changed_since(claim.snapshot, listing, digests):
            blockers.append(f"{role}: {', '.join(changed)} changed after /ready")
    return blockers
