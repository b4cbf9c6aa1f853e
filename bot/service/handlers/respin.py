"""``/respin TAG``: an RM withdraws every claim and pending confirmation for new files."""

from __future__ import annotations

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.history import EventKind, ReleaseState
from bot.ports.messages import Reply, Tone
from bot.service.refusals import Refusal, refuse_unless
from bot.service.services import Services


async def respin(s: Services, person: str, command: cmd.Respin, state: ReleaseState) -> Reply:
    """Withdraw every claim and the pending plan; staging is left as it is."""
    tag = command.tag
    refuse_unless(authority.may_respin(s.team, person, tag))
    if not state.claims and state.offer is None:
        raise Refusal(f"{tag} has no claim or pending confirmation to withdraw.")
    for role in state.claims:
        reason = f"re-spin started by {person}"
        s.store.append(tag, person, EventKind.WITHDRAWN, role=role, reason=reason)
    if state.offer is not None:
        s.store.append(tag, person, EventKind.PLAN_DROPPED, reason="withdrawn by a re-spin")
    await s.reporter.notice(
        tag,
        f"{person} started a re-spin of {tag}: every claim is withdrawn; "
        f"say /ready ROLE {tag} again once the new files are staged.",
    )
    await s.refresh(tag)
    s.observer.forget_files(tag)  # new files are coming: the old ones' hashes are dead weight
    return Reply(
        f"Re-spin of {tag}: claims and pending confirmation withdrawn; staging was left as it is.",
        Tone.SUCCESS,
    )
