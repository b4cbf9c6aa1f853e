"""``/status [TAG]``: anyone may look; nothing is recorded."""

from __future__ import annotations

from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.ports.messages import ChannelKind, ChannelMessage, Reply
from bot.service.refusals import Refusal
from bot.service.render import summary_text
from bot.service.services import Services


async def status(s: Services, tags: list[ReleaseTag]) -> Reply:
    """The summary of each of ``tags`` (the open releases when none was named). Raises
    ``StagingUnreachable`` when staging cannot be reached at all."""
    if not tags:
        return Reply("No open releases; stage files to start one (see /help).")
    shown = []
    for one in tags:
        async with s.lock(one):
            state = s.store.release(one)
            if state.publishing is not None:  # its files are frozen, not in staging
                trouble = s.reporter.trouble(one)
                text = f"{one}: publishing now (confirmed by {state.publisher})." + (
                    f" {trouble}" if trouble else ""
                )
                shown.append(ChannelMessage(ChannelKind.NOTICE, str(one), text))
                continue
            if state.is_published and not await s.observer.late(one):
                text = summary_text(await s.observer.readiness(one, {}, None, state), state)
                shown.append(ChannelMessage(ChannelKind.SUMMARY, str(one), text))
                continue
            try:
                readiness, _ = await s.observer.observe(one, state, settle=False)
            except Refusal as err:  # nothing staged: for a status, an answer, not an error
                shown.append(ChannelMessage(ChannelKind.NOTICE, str(one), f"{one}: {err}"))
                continue
            except StagingUnreachable:
                raise
            except StorageError as err:  # one release's trouble: answer for the others
                shown.append(ChannelMessage(ChannelKind.NOTICE, str(one), f"{one}: {err}"))
                continue
            text = summary_text(readiness, state)
            shown.append(ChannelMessage(ChannelKind.SUMMARY, str(one), text, readiness))
    return Reply("\n".join(m.text for m in shown), summaries=tuple(shown))
