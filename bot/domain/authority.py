"""Who may do what: roles claim their own files, RMs of a branch decide for its releases,
anyone on the team may hold, and a hold is lifted by its holder or an RM.

Each function returns None when ``person`` may act, else the one-sentence refusal. The team
is read through :class:`Roster` (``bot.team.Team`` is one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from bot.domain.tags import ReleaseTag


class Roster(Protocol):
    def has_role(self, person: str, role: str) -> bool: ...
    def roles_of(self, person: str) -> list[str]: ...
    def is_rm(self, person: str, branch: str) -> bool: ...
    def rms_of(self, branch: str) -> list[str]: ...


def unmanaged(team: Roster, tag: ReleaseTag) -> str | None:
    """Every command acting on a release needs an RM of its branch to exist."""
    if team.rms_of(tag.branch):
        return None
    return (
        f"No release manager is configured for {tag.branch}; add the branch to a "
        "person's rm list in the config first."
    )


def may_ready(team: Roster, person: str, role: str) -> str | None:
    """Only a holder of ``role`` says it is ready."""
    if team.has_role(person, role):
        return None
    held = ", ".join(team.roles_of(person)) or "no role"
    return f"Only people holding the {role} role can say it is ready; you hold {held}."


def may_unready(team: Roster, person: str, role: str, tag: ReleaseTag) -> str | None:
    """A claim is withdrawn by a holder of its role or an RM of the branch."""
    if team.has_role(person, role) or team.is_rm(person, tag.branch):
        return None
    return f"Only a {role} person or an RM of {tag.branch} can withdraw {role}."


def holds_lifted(team: Roster, person: str, tag: ReleaseTag, holders: Sequence[str]) -> list[str]:
    """The holds ``person``'s ``/unhold`` lifts: every one for an RM, else their own."""
    if team.is_rm(person, tag.branch):
        return list(holders)
    return [person] if person in holders else []


def may_lift_hold(team: Roster, person: str, tag: ReleaseTag, holders: Sequence[str]) -> str | None:
    """A hold is lifted by whoever put it or an RM of the branch."""
    if holds_lifted(team, person, tag, holders):
        return None
    return f"{tag} is held by {', '.join(holders)}; only they or an RM of {tag.branch} can lift it."


def may_act_as_rm(team: Roster, person: str, tag: ReleaseTag, what: str) -> str | None:
    """RM-only commands: ``what`` completes "can ... TAG" in the refusal."""
    if team.is_rm(person, tag.branch):
        return None
    rms = ", ".join(team.rms_of(tag.branch))
    return f"Only a release manager of {tag.branch} ({rms}) can {what} {tag}."


def may_publish(team: Roster, person: str, tag: ReleaseTag) -> str | None:
    """``/publish`` and its confirmation."""
    return may_act_as_rm(team, person, tag, "publish")


def may_abort(team: Roster, person: str, tag: ReleaseTag) -> str | None:
    return may_act_as_rm(team, person, tag, "abort the publish of")


def may_respin(team: Roster, person: str, tag: ReleaseTag) -> str | None:
    return may_act_as_rm(team, person, tag, "re-spin")


def may_waive(team: Roster, person: str, tag: ReleaseTag) -> str | None:
    return may_act_as_rm(team, person, tag, "waive rules for")


def may_unwaive(team: Roster, person: str, tag: ReleaseTag) -> str | None:
    return may_act_as_rm(team, person, tag, "undo waivers of")


def may_announce(team: Roster, person: str, tag: ReleaseTag) -> str | None:
    """``/announce``: the announcement is the RM's, read and written by them."""
    return may_act_as_rm(team, person, tag, "read or write the announcement of")


RmRule = Callable[[Roster, str, ReleaseTag], "str | None"]
"""The shape of the RM-only rules (``may_publish`` and the like)."""
