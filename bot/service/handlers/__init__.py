"""One small handler per command, each a function ``(services, person, command, state) ->
Reply`` that checks the domain's rules, appends events and tells the channel; a refusal is a
raised :class:`bot.service.refusals.Refusal` and changes nothing.

``dispatch`` applies what every command on a release needs first: an RM for its branch, a
release not already published (unless late files are staged), no publish in progress
(except the commands that may pause or cancel one). A command whose files are still being
hashed is answered at once, and followed up in the channel when they are: ``/ready`` is
then run again (and records the claim, or says why not), another command is to be typed
again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.history import ReleaseState
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.ports.messages import Reply
from bot.service.handlers.announce import announce
from bot.service.handlers.claims import ready, unready
from bot.service.handlers.finishing import while_publishing
from bot.service.handlers.holds import hold, unhold
from bot.service.handlers.publishing import abort, confirm, publish
from bot.service.handlers.respin import respin
from bot.service.handlers.status import glance, look_at_unlisted, looks, status
from bot.service.handlers.waivers import unwaive, waive
from bot.service.hashing import StillHashing
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

__all__ = ["HANDLERS", "dispatch", "glance", "look_at_unlisted", "looks", "status"]


async def dispatch(s: Services, person: str, command: cmd.Command) -> Reply:
    """Run ``command``'s handler for ``person`` (on the team); raises :class:`Refusal`."""
    try:
        return await _run(s, person, command)
    except StillHashing as pending:
        assert not isinstance(command, cmd.Help | cmd.Status)  # they hash nothing
        s.follow_ups.start(_when_hashed(s, person, command, command.tag, pending))
        later = (
            f"I will tell the channel whether {command.role} is ready for {command.tag} "
            "once it is done."
            if isinstance(command, cmd.Ready)
            else "I will say in the channel when it is done."
        )
        return Reply(f"{pending} {later}")


async def _run(s: Services, person: str, command: cmd.Command) -> Reply:
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


async def _when_hashed(
    s: Services, person: str, command: cmd.Command, tag: ReleaseTag, pending: StillHashing
) -> None:
    """Once ``pending``'s files are hashed: run ``/ready`` again (nothing is recorded unless
    its files are all there, unchanged), or say the other command may be typed again."""
    await pending.done
    if not isinstance(command, cmd.Ready):
        files = (
            "The file staged for {} is"
            if len(pending.paths) == 1
            else "The files staged for {} are"
        )
        again = {cmd.Publish: f"/publish {tag}", cmd.Confirm: "the confirm line"}.get(
            type(command), "your command"
        )
        text = f"{files.format(tag)} checked; say {again} again."
        await s.reporter.notice(tag, text, mentions=[person])
        return
    async with s.lock(tag):
        try:
            text = (await _run(s, person, command)).text
        except StillHashing as again:  # changed meanwhile: told once that is hashed
            s.follow_ups.start(_when_hashed(s, person, command, tag, again))
            return
        except Refusal as err:
            text = str(err)
        except StorageError as err:
            text = f"{err} Nothing was changed; say /ready {command.role} {tag} again."
    await s.reporter.notice(tag, text, mentions=[person])
