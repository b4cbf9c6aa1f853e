"""``/status [TAG]``: anyone may look; nothing is recorded. With TAG, the release's summary
in full; with none, the day at a glance: one line per open release, within what the
platform's message holds (:mod:`bot.service.glance`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.domain.files import RELEASE_FOLDER, is_cut
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.ports.messages import ChannelKind, ChannelMessage, Reply
from bot.service.glance import Look, glance_text
from bot.service.observed import Observed
from bot.service.refusals import Refusal
from bot.service.render import summary_text
from bot.service.services import Services

NO_OPEN = "No open releases; stage files to start one (see /help)."


async def status(s: Services, one: ReleaseTag) -> Reply:
    """``/status TAG``: the release's summary in full. Raises ``StagingUnreachable`` when
    staging cannot be reached at all."""
    message = await _summary(s, one)
    return Reply(message.text, summaries=(message,))


async def _summary(s: Services, one: ReleaseTag) -> ChannelMessage:
    async with s.lock(one):
        state = s.store.release(one)
        if state.publishing is not None:  # its files are frozen, not in staging
            trouble = s.reporter.trouble(one)
            text = f"{one}: publishing now (confirmed by {state.publisher})." + (
                f" {trouble}" if trouble else ""
            )
            return ChannelMessage(ChannelKind.NOTICE, str(one), text)
        if state.is_published and not await s.observer.late(one):
            text = summary_text(await s.observer.readiness(one, {}, None, state), state)
            return ChannelMessage(ChannelKind.SUMMARY, str(one), text)
        try:
            readiness, _ = await s.observer.observe(one, state, settle=False)
        except Refusal as err:  # nothing staged: for a status, an answer, not an error
            return ChannelMessage(ChannelKind.NOTICE, str(one), f"{one}: {err}")
        except StagingUnreachable:
            raise
        except StorageError as err:  # this release's trouble, said as its status
            return ChannelMessage(ChannelKind.NOTICE, str(one), f"{one}: {err}")
        return ChannelMessage(
            ChannelKind.SUMMARY, str(one), summary_text(readiness, state), readiness
        )


async def look_at_unlisted(s: Services, tags: list[ReleaseTag]) -> dict[ReleaseTag, str]:
    """Before the day at a glance: list, once, each open release the bot has not listed
    since it started (before the first scan, or ``relbot status``), as a scan would (one
    listing, nothing hashed). What cannot be listed, or holds nothing, is said per release."""
    notes = {}
    for one in tags:
        seen = s.observer.seen(one)
        if seen is not None and seen.listing is not None:
            if not seen.listing and not s.store.release(one).is_published:
                notes[one] = "nothing staged yet"  # the folder is empty, or gone since
            continue
        async with s.lock(one):
            state = s.store.release(one)
            if state.publishing is not None or state.is_published:
                continue  # the log says it all (late files are listed by the scan)
            try:
                listing = await s.observer.list_staging(one)
            except StagingUnreachable:
                raise
            except StorageError as err:  # one release's trouble: the others go on
                notes[one] = f"staging cannot be listed ({str(err).rstrip('.')})"
                continue
            if listing is None:
                notes[one] = "nothing staged yet"
                continue
            if (folder := listing.get(RELEASE_FOLDER)) is not None and not is_cut(listing):
                notes[one] = f"its staging folder {folder.problem}"
                continue
            sight = s.observer.sight(one)
            if sight.listing is None:  # a scan may have listed it meanwhile
                sight.listing = listing
    return notes


def looks(
    s: Services, seen: Sequence[tuple[ReleaseTag, Observed]], notes: Mapping[ReleaseTag, str]
) -> list[Look]:
    """What each release's line of the day at a glance is made of (the board's too)."""
    made = []
    for one, observed in seen:
        sight = s.observer.seen(one)
        made.append(
            Look(
                one,
                observed,
                rms=s.team.rms_of(one.branch),
                holders={r: s.team.holders(r) for r in s.profile.roles_for(one)},
                roles=s.profile.roles_for(one),
                trouble=s.reporter.trouble(one) if observed.state.publishing else "",
                late=bool(sight is not None and sight.listing),
                note=notes.get(one, ""),
            )
        )
    return made


def glance(
    s: Services,
    seen: list[tuple[ReleaseTag, Observed]],
    notes: dict[ReleaseTag, str],
    room: int | None,
) -> Reply:
    """``/status`` with no tag: one line per open release (:mod:`bot.service.glance`)."""
    if not seen:
        return Reply(NO_OPEN)
    return Reply(glance_text(looks(s, seen, notes), s.clock(), room))
