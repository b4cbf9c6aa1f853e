"""``/status`` with no tag: the day at a glance. One line per open release: its tag, the word
for where it stands, what blocks it and who must act, newest release first; and the whole
answer within what one message holds on the platform that asked (``room``: Discord's 2,000
characters less its code block, Slack's text; the console has no limit). Releases that do not
fit are counted in a last line that says how to see them: ``/status TAG``.

Pure: built from what the bot last saw of each release (:class:`Observed`), no I/O.

Where a release stands, first match wins:

- ``publishing``: a publish is confirmed and running (or stopped: the reason follows);
- ``published``: every file is public (late files staged are said);
- ``held``: someone said ``/hold``; the holder or an RM may ``/unhold``;
- ``collecting``: a role the release needs has not said ``/ready`` (with its files' state);
- ``ready``: every role is ready or waived, something else blocks (a stray file, a
  signature, python.org): the first reason, and how many more;
- ``publishable``: the RM may say ``/publish TAG`` (or confirm the plan shown);
- ``aborted`` instead of the last three while the newest publish was aborted and nothing was
  confirmed since: who aborted it and why, then where it stands now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.domain.readiness import FileStatus, RoleReadiness
from bot.domain.tags import ReleaseTag
from bot.domain.text import shown
from bot.service.observed import Observed
from bot.service.render import count, role_line, when

LINE_LIMIT = 160  # characters one release's line may take: a long reason cannot crowd others
WORD_WIDTH = len("publishable")  # the widest word, so the details line up


@dataclass(frozen=True)
class Look:
    """What one release's line is made of: the release as last seen, who may act on it, and
    what the bot knows besides (why its publish stopped; late files staged; a listing that
    failed or found nothing)."""

    tag: ReleaseTag
    observed: Observed
    rms: Sequence[str]
    holders: Mapping[str, Sequence[str]]  # role → the people who hold it
    roles: Sequence[str]  # the roles the release needs (the profile's, for its tag)
    trouble: str = ""
    late: bool = False
    note: str = ""  # why staging's state is not known (nothing staged, a listing failed)


def where(look: Look, now: float) -> tuple[str, str]:
    """(word, detail) of one release: where it stands, what blocks it and who must act."""
    state, tag = look.observed.state, str(look.tag)
    if state.publishing is not None:
        trouble = f"; stopped: {look.trouble}" if look.trouble else ""
        return "publishing", f"confirmed by {state.publisher}{trouble}"
    if state.is_published and state.published_at is not None:
        late = f"; late files staged (/status {tag})" if look.late else ""
        return "published", f"by {state.published_by} at {when(state.published_at)}{late}"
    rms = _people(look.rms) if look.rms else "nobody (no release manager is configured)"
    if state.holds:
        first, *others = state.holds.values()
        why = f": {shown(first.reason)}" if first.reason else ""
        more = f" (and {count(len(others), 'more hold')})" if others else ""
        who = _people([first.person, *(p for p in look.rms if p != first.person)])
        return "held", f"by {first.person}{why}{more}; {who} may /unhold {tag}"
    word, detail = _progress(look, rms, now)
    if state.aborted is not None:
        a = state.aborted  # /abort's reason only repeats who: "aborted by hugo with /abort"
        said = a.reason and not a.reason.startswith(f"aborted by {a.by}")
        why = f": {shown(a.reason)}" if said else ""
        return "aborted", f"by {a.by}{why}; now {word}: {detail}"
    return word, detail


def _progress(look: Look, rms: str, now: float) -> tuple[str, str]:
    """collecting, ready or publishable, with what blocks it and who must act."""
    observed, tag = look.observed, str(look.tag)
    waiting = _waiting(look)
    nobody = "" if look.rms else f"; no release manager is configured for {look.tag.branch}"
    if look.note:  # staging could not be listed, or holds nothing: the log says the rest
        then = f"; waits for {waiting}" if waiting else f"; RM: {rms}"
        return "collecting" if waiting else "ready", f"{look.note}{then}{nobody}"
    if waiting:
        unlisted = "" if observed.readiness is not None else "; staging not listed yet"
        return "collecting", f"waits for {waiting}{unlisted}{nobody}"
    if observed.blockers:
        first, more = observed.blockers[0], len(observed.blockers) - 1
        others = f" (and {more} more)" if more else ""
        return "ready", f"blocked by {shown(first)}{others}; RM: {rms}"
    offer = observed.state.offer
    if offer is not None and now <= offer.expires_at:
        until = when(offer.expires_at).split(" ", 1)[1]
        return "publishable", f"plan shown to {offer.person}, who may confirm it until {until}"
    return "publishable", f"{rms} may /publish {tag}"


def _waiting(look: Look) -> str:
    """``ROLE, ROLE (PERSON: what is wrong)`` for the roles the release waits for: each role's
    holders, and its files' trouble when they are not all there (else it waits for
    ``/ready``); neighbours with the same people and trouble share the parenthesis."""
    readiness, state = look.observed.readiness, look.observed.state
    if readiness is None:  # not listed: what the log says
        waived = {t for t, w in state.waivers.items() if w.is_role}
        todo = [(r, "") for r in look.roles if r not in state.claims and r not in waived]
    else:
        todo = [(r.role, why) for r in readiness.roles if (why := _todo(r, str(readiness.tag)))]
        todo = [(role, "" if why == "/ready" else why) for role, why in todo]
    groups: list[tuple[list[str], str]] = []
    for role, why in todo:
        who = _people(look.holders.get(role, ()), "nobody holds it") + (f": {why}" if why else "")
        if groups and groups[-1][1] == who:
            groups[-1][0].append(role)
        else:
            groups.append(([role], who))
    return ", ".join(f"{', '.join(roles)} ({who})" for roles, who in groups)


def _todo(role: RoleReadiness, tag: str) -> str:
    """What a role's holder must do, or "" when the role blocks nothing."""
    word, _ = role_line(role, tag)
    if word in ("ready", "waived", "public"):
        return ""
    if word == "incomplete":
        missing = [f for f in role.problems if f.status is FileStatus.MISSING]
        if len(missing) == len(role.problems):
            return f"{count(len(missing), 'file')} missing"
        return f"{count(len(role.problems), 'file')} not ready"
    if word == "withdrawn":
        return "claim withdrawn; /ready again"
    return "/ready"


def _people(names: Sequence[str], nobody: str = "nobody") -> str:
    return " or ".join(names) if names else nobody


def lines(looks: Sequence[Look], now: float) -> list[str]:
    """One line per release, newest first, the words in one column."""
    ordered = sorted(looks, key=lambda look: look.tag, reverse=True)
    width = max((len(str(look.tag)) for look in ordered), default=0)
    found = []
    for look in ordered:
        word, detail = where(look, now)
        line = f"{look.tag!s:<{width}}  {word:<{WORD_WIDTH}}  {detail}"
        found.append(line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 1] + "…")
    return found


def glance_text(looks: Sequence[Look], now: float, room: int | None) -> str:
    """The answer: a head line, then a line per release; with ``room`` (characters), as many
    as fit and a last line counting the others."""
    found = lines(looks, now)
    n = len(found)
    head = f"{count(n, 'open release')}, newest first (/status TAG shows one in full):"
    text = "\n".join([head, *found])
    if room is None or len(text) <= room:
        return text
    kept = [head]
    size = len(head)
    for i, line in enumerate(found):
        rest = n - i - 1
        tail = _more(rest) if rest else ""
        if size + 1 + len(line) + (1 + len(tail) if tail else 0) > room:
            break
        kept.append(line)
        size += 1 + len(line)
    kept.append(_more(n - len(kept) + 1))
    return "\n".join(kept)


def _more(n: int) -> str:
    return f"…and {count(n, 'more release')}: /status TAG shows one in full."
