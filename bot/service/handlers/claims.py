"""``/ready ROLE TAG`` and ``/unready ROLE TAG``: claims on a release's files."""

from __future__ import annotations

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.files import SnapshotFile
from bot.domain.history import EventKind, ReleaseState
from bot.domain.readiness import RoleReadiness, described
from bot.domain.tags import ReleaseTag
from bot.ports.messages import Reply, Tone
from bot.service.hashing import StillHashing
from bot.service.refusals import Refusal, refuse_unless
from bot.service.render import count, size_text
from bot.service.services import Services


async def ready(s: Services, person: str, command: cmd.Ready, state: ReleaseState) -> Reply:
    """Record a snapshot of ``role``'s staged files, after checking they are all there."""
    role, tag = command.role, command.tag
    refuse_unless(authority.may_ready(s.team, person, role))
    if role not in s.profile.roles_for(tag):
        raise Refusal(
            f"{role} is not part of {tag} (the {s.profile.name} profile has it "
            "for other kinds of release only)."
        )
    readiness, listing = await s.observer.observe(tag, state, settle=True)
    _refuse_problems(s, readiness.role(role), tag)
    paths = [f.path for f in readiness.role(role).present]
    looked = await s.observer.look_digests(tag, listing, paths)
    if looked.faults:  # found while hashing (a sparse file on a server): now its problem
        readiness = await s.observer.readiness(tag, listing, None, state)
        _refuse_problems(s, readiness.role(role), tag)
    if looked.pending:
        raise StillHashing.of(tag, listing, looked)
    digests = looked.digests
    snapshot = [
        SnapshotFile(p, listing[p].size, listing[p].mtime, digests[p]).to_json() for p in paths
    ]
    s.store.append(tag, person, EventKind.CLAIMED, role=role, snapshot=snapshot)
    state = s.store.release(tag)
    # The listing was just observed, settled and recorded as the last one: nothing in it can
    # show as changed since, so there is no earlier listing to compare it with.
    readiness = await s.observer.readiness(tag, listing, None, state)
    await s.reporter.summary(readiness, state)
    size = size_text(sum(listing[p].size for p in paths))
    return Reply(
        f"{role} is ready for {tag}: {count(len(paths), 'file')} ({size}) recorded. "
        f"{readiness.claimed_roles} of {len(readiness.roles)} roles ready.",
        Tone.SUCCESS,
    )


def _refuse_problems(s: Services, role_state: RoleReadiness, tag: ReleaseTag) -> None:
    """Refuse a claim on a role with problems, naming each (a few, then how many more)."""
    if role_state.problems:
        where = s.conn.storage.staging_location(tag)
        listed = described(role_state.problems)
        raise Refusal(
            f"{role_state.role} is not ready for {tag}: {listed}; fix them in {where} and "
            f"say /ready {role_state.role} {tag} again."
        )


async def unready(s: Services, person: str, command: cmd.Unready, state: ReleaseState) -> Reply:
    """Withdraw ``role``'s claim, telling whoever made it."""
    role, tag = command.role, command.tag
    refuse_unless(authority.may_unready(s.team, person, role, tag))
    if role not in state.claims:
        raise Refusal(f"{role} has no claim on {tag} to withdraw.")
    reason = f"withdrawn by {person} with /unready"
    claimer = state.claims[role].person
    s.store.append(tag, person, EventKind.WITHDRAWN, role=role, reason=reason)
    others = [claimer] if claimer != person else []  # tell whoever claimed it
    await s.reporter.notice(tag, f"{person} withdrew {role} from {tag}.", mentions=others)
    await s.refresh(tag)
    return Reply(f"{role} is no longer ready for {tag}.", Tone.SUCCESS)
