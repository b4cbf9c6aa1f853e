"""``/waive TAG TARGET [REASON]`` and ``/unwaive TAG TARGET``: an RM's exceptions for one
release."""

from __future__ import annotations

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.history import EventKind, ReleaseState
from bot.domain.waivers import WaiverError, resolve_target
from bot.ports.messages import Reply, Tone
from bot.service.refusals import Refusal, refuse_unless
from bot.service.services import Services


async def waive(s: Services, person: str, command: cmd.Waive, state: ReleaseState) -> Reply:
    """Waive a file or a role for this release only (``resolve_target`` says which)."""
    tag, target = command.tag, command.target
    refuse_unless(authority.may_waive(s.team, person, tag))
    if target in state.waivers:
        raise Refusal(f"{target} is already waived for {tag}; /unwaive {tag} {target} undoes it.")
    staged = await s.observer.list_staging(tag) or {}
    try:
        is_role = resolve_target(s.profile, tag, target, staged)
    except WaiverError as err:
        raise Refusal(str(err)) from err
    await s.require_known(tag)
    s.store.append(
        tag, person, EventKind.WAIVED, target=target, role=is_role, reason=command.reason
    )
    what = "needs no /ready" if is_role else "no longer blocks"
    why = f": {command.reason}" if command.reason else ""
    await s.reporter.notice(tag, f"{person} waived {target} for {tag} ({what}){why}.")
    await s.refresh(tag)
    return Reply(f"{target} is waived for {tag}; /unwaive {tag} {target} undoes it.", Tone.SUCCESS)


async def unwaive(s: Services, person: str, command: cmd.Unwaive, state: ReleaseState) -> Reply:
    """Undo a waiver."""
    tag, target = command.tag, command.target
    refuse_unless(authority.may_unwaive(s.team, person, tag))
    if target not in state.waivers:
        raise Refusal(f"{target} is not waived for {tag}.")
    s.store.append(tag, person, EventKind.UNWAIVED, target=target)
    await s.reporter.notice(tag, f"{person} undid the waiver of {target} for {tag}.")
    await s.refresh(tag)
    return Reply(f"{target} is no longer waived for {tag}.", Tone.SUCCESS)
