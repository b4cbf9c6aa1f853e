"""``/hold TAG [REASON]`` and ``/unhold TAG``: anyone on the team can stop a publish."""

from __future__ import annotations

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.history import EventKind, ReleaseState
from bot.ports.messages import Reply, Tone
from bot.service.refusals import Refusal, refuse_unless
from bot.service.services import Services


async def hold(s: Services, person: str, command: cmd.Hold, state: ReleaseState) -> Reply:
    """Block publishing ``tag`` (a release someone staged or acted on) until lifted."""
    tag = command.tag
    await s.require_known(tag)
    if person in state.holds:
        raise Refusal(f"You already hold {tag}; /unhold {tag} lifts it.")
    s.store.append(tag, person, EventKind.HELD, reason=command.reason)
    why = f": {command.reason}" if command.reason else ""
    await s.reporter.notice(tag, f"{person} put {tag} on hold{why}. /unhold {tag} lifts it.")
    await s.refresh(tag)
    return Reply(f"{tag} is on hold; nothing is published until /unhold {tag}.", Tone.SUCCESS)


async def unhold(s: Services, person: str, command: cmd.Unhold, state: ReleaseState) -> Reply:
    """Lift ``person``'s hold, or every hold when an RM lifts them."""
    tag = command.tag
    if not state.holds:
        raise Refusal(f"{tag} is not on hold.")
    holders = list(state.holds)
    refuse_unless(authority.may_lift_hold(s.team, person, tag, holders))
    for holder in authority.holds_lifted(s.team, person, tag, holders):
        s.store.append(tag, person, EventKind.UNHELD, holder=holder)
    await s.reporter.notice(tag, f"{person} lifted the hold on {tag}.")
    await s.refresh(tag)
    return Reply(f"{tag} is no longer on hold.", Tone.SUCCESS)
