"""One small handler per command, each a function ``(services, person, command, state) ->
Reply`` that checks the domain's rules, appends events and tells the channel; a refusal is a
raised :class:`bot.service.refusals.Refusal` and changes nothing.

``dispatch`` applies what every command on a release needs first: an RM for its branch, a
release not already published (unless late files are staged), no publish in progress
(except the commands that may pause or cancel one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.history import ReleaseState
from bot.ports.messages import Reply
from bot.service.handlers.announce import announce
from bot.service.handlers.claims import ready, unready
from bot.service.handlers.finishing import while_publishing
from bot.service.handlers.holds import hold, unhold
from bot.service.handlers.publishing import abort, confirm, publish
from bot.service.handlers.respin import respin
from bot.service.handlers.status import status
from bot.service.handlers.waivers import unwaive, waive
from bot.service.refusals import Refusal
from bot.service.render import when
from bot.service.services import Services
from bot.service.while_publishing import ALLOWED_WHILE_PUBLISHING

Handler = Callable[[Services, str, Any, ReleaseState], Awaitable[Reply]]

HANDLERS: dict[type[cmd.Command], Handler] = {
    cmd.Ready: ready,
    cmd.Unready: unready,
    cmd.Hold: hold,
    cmd.Unhold: unhold,
    cmd.Publish: publish,
    cmd.Confirm: confirm,
    cmd.Respin: respin,
    cmd.Waive: waive,
    cmd.Unwaive: unwaive,
    cmd.Abort: abort,
    cmd.Announce: announce,
}

__all__ = ["HANDLERS", "dispatch", "status"]


async def dispatch(s: Services, person: str, command: cmd.Command) -> Reply:
    """Run ``command``'s handler for ``person`` (on the team); raises :class:`Refusal`."""
    assert not isinstance(command, cmd.Help | cmd.Status)
    tag = command.tag
    if (unmanaged := authority.unmanaged(s.team, tag)) is not None:
        # A typo (3.99.9) names no configured branch either: say what was probably meant.
        raise Refusal(await s.unknown_release(tag) or unmanaged)
    state = s.store.release(tag)
    if (
        state.is_published
        and state.published_at is not None
        and state.publishing is None
        and not await s.observer.late(tag)
    ):
        raise Refusal(
            f"{tag} is already published (by {state.published_by} at "
            f"{when(state.published_at)}); nothing to change."
        )
    busy = state.publishing is not None and not isinstance(command, ALLOWED_WHILE_PUBLISHING)
    if busy and (refused := while_publishing(s, state, command)) is not None:
        raise Refusal(refused)
    return await HANDLERS[type(command)](s, person, command, state)
