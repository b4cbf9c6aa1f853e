"""A tag the bot has never seen (nothing staged, nobody acted on it, never published) is
most often a typo: the refusal says so and points at the nearest release it knows, instead
of sending the person to edit the config."""

from __future__ import annotations

import asyncio
import difflib

from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError
from bot.services import Services

SHOWN = 5  # open releases named when none is close to what was typed


async def unknown_release(s: Services, tag: ReleaseTag) -> str | None:
    """The refusal of ``tag`` when the bot knows nothing of it, with what was probably
    meant; None for a release it knows."""
    if tag in s.store.open_tags() or s.store.release(tag).is_published:
        return None
    if await asyncio.to_thread(s.conn.storage.list_staging, tag) is not None:
        return None
    known = {str(t) for t in s.store.open_tags()}
    for name in await asyncio.to_thread(s.conn.storage.staged_tags):
        try:
            known.add(str(ReleaseTag.parse(name)))
        except RelbotError:
            continue  # a folder that is not a release
    return f"No release {tag} is known: nothing is staged or recorded for it; " + _hint(
        str(tag), sorted(known)
    )


def _hint(typed: str, known: list[str]) -> str:
    close = difflib.get_close_matches(typed, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]}?"
    if not known:
        return "no release is open (stage files to start one)."
    more = f" and {len(known) - SHOWN} more" if len(known) > SHOWN else ""
    return f"the open releases are {', '.join(known[:SHOWN])}{more} (/status shows them)."
