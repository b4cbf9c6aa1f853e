"""``/announce TAG`` and ``/announce TAG TEXT…``: the RM reads the announcement the publish
will post on the forum, and writes their own part of it (the rest is the config's frame)."""

from __future__ import annotations

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.announcement import Announcement, AnnouncementError, Frame, words_problem
from bot.domain.history import EventKind, ReleaseState
from bot.domain.tags import ReleaseTag
from bot.ports.messages import Reply, Tone
from bot.service.pipeline import announcing
from bot.service.refusals import Refusal, refuse_unless
from bot.service.services import Services


async def announce(s: Services, person: str, command: cmd.Announce, state: ReleaseState) -> Reply:
    """Show the announcement, or set the RM's words in it (journaled; voids a plan offered
    with other words, since the text is part of what a confirmation is bound to)."""
    tag = command.tag
    refuse_unless(authority.may_announce(s.team, person, tag))
    if not announcing.announced(s.conn, state):
        if state.public_files:
            raise Refusal(f"{tag} is published; late files are not announced on the forum.")
        raise Refusal(
            f"No forum is configured, so publishing {tag} tells this channel only; a "
            "[discourse] table in the config posts an announcement."
        )
    if command.words is None:
        return await _show(s, tag, state)
    return await _set(s, person, tag, command.words.strip(), state)


async def _show(s: Services, tag: ReleaseTag, state: ReleaseState) -> Reply:
    if state.publishing is not None:
        text = state.publishing.announcement
        if text is None:
            raise Refusal(f"The publish of {tag} under way posts no announcement.")
        return Reply(_shown(s, f"The announcement of {tag} confirmed with its plan", text))
    text = await _draft(s, tag, state, state.announcement_words)
    offered = state.offer.plan.announcement if state.offer is not None else None
    head = f"The announcement of {tag}, with the files staged now"
    if offered == text:
        head += " (as in the plan offered)"
    shown = _shown(s, head, text)
    if _frame(s, tag).wants_words and not state.announcement_words:
        shown += (
            f"\nYour words are not set yet: /announce {tag} TEXT… sets them; "
            "/publish waits for them."
        )
    return Reply(shown)


async def _set(s: Services, person: str, tag: ReleaseTag, words: str, state: ReleaseState) -> Reply:
    if state.publishing is not None:
        raise Refusal(
            f"{tag} is being published with the announcement its plan confirmed; it no "
            "longer changes."
        )
    if problem := words_problem(words):
        raise Refusal(problem)
    await s.require_known(tag)
    if not _frame(s, tag).wants_words:
        raise Refusal(
            "The announcement's template has no {words}, so your words would not be posted; "
            "add {words} to the file discourse.template names."
        )
    text = await _draft(s, tag, state, words)
    s.store.append(tag, person, EventKind.ANNOUNCEMENT_WORDS, words=words)
    reply = (
        f"Your words are in the announcement of {tag} (SHA-256 {text.short_hash} with the "
        f"files staged now); /announce {tag} shows it."
    )
    if state.offer is not None:
        reply += f" The plan offered earlier had other words: /publish {tag} for a new one."
    return Reply(reply, Tone.SUCCESS)


async def _draft(s: Services, tag: ReleaseTag, state: ReleaseState, words: str) -> Announcement:
    """The announcement for the files staged now (one listing), as ``/publish`` would plan
    it with these ``words``. Raises :class:`Refusal` when it cannot be drafted."""
    listing = await s.observer.list_staging(tag) or {}
    readiness = await s.observer.readiness(tag, listing, None, state)
    targets = [
        s.profile.public_target(tag, role.role, f.path)
        for role in readiness.roles
        if not role.excused
        for f in role.present
    ]
    try:
        return announcing.draft_for(s.config, tag, targets, words)
    except AnnouncementError as err:
        raise Refusal(str(err)) from err


def _frame(s: Services, tag: ReleaseTag) -> Frame:
    try:
        return announcing.frame(s.config, tag)
    except AnnouncementError as err:
        raise Refusal(str(err)) from err


def _shown(s: Services, head: str, text: Announcement) -> str:
    settings = s.config.model.discourse
    where = ""
    if settings is not None:
        tags = ", ".join(settings.tags) or "no tags"
        where = f" for {settings.url} (category {settings.category}, {tags})"
    return f"{head}{where}, SHA-256 {text.short_hash}:\n\n{text.text}"
