"""The RM's way out of a publish that stopped after making files public (it cannot be
aborted then): ``/publish TAG`` offers to finish it without the files the stop concerns (or,
stopped at the install index, with the index staged again and claimed), and
``/publish TAG confirm CODE`` journals that choice (audited) and goes on from where it
stopped. Files left out stay in staging, to be published later as late files.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import replace

from bot.domain import commands as cmd
from bot.domain.history import ReleaseState
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.text import listing
from bot.domain.windows_index import INDEX_STEP
from bot.service.refusals import Refusal
from bot.service.services import Services
from bot.service.stops import stop_text
from bot.service.while_publishing import busy_refusal


def while_publishing(s: Services, state: ReleaseState, command: cmd.Command) -> str | None:
    """Why ``command`` is refused while ``state``'s publish is under way or stopped (None:
    it is one of the ways out). A stopped publish is refused with its own sentence."""
    plan, stop = state.publishing, state.stopped
    assert plan is not None  # only a confirmed publish is under way
    if stop is None:
        return busy_refusal(state.tag, s.reporter.trouble(state.tag))
    if stop.public and isinstance(command, cmd.Publish | cmd.Confirm):
        return None
    if (
        stop.step == INDEX_STEP
        and isinstance(command, cmd.Ready | cmd.Unready)
        and command.role in {f.role for f in plan.replacements}
    ):
        return None  # the index is staged again and claimed before /publish finishes
    return stop_text(state.tag, stop)


async def finishing_plan(s: Services, state: ReleaseState) -> tuple[PublishPlan, str]:
    """The plan that finishes ``state``'s stopped publish, and what it does in words.
    Raises :class:`Refusal` when a re-staged index is not ready to be published."""
    plan, stop = state.publishing, state.stopped
    assert plan is not None and stop is not None
    if stop.step == INDEX_STEP:
        restaged, shared = await _restaged_index(s, state, plan)
        if restaged:
            names = listing([f.path for f in restaged])
            return (
                replace(plan, files=plan.promoted.files + restaged, index_shared_with=shared),
                f"publish the re-staged {names}, replacing the live index as it is now",
            )
        left = [f.path for f in plan.replacements]
        return (
            replace(plan, files=plan.promoted.files, index_shared_with=()),
            f"finish without {listing(left)} (the live index stays as it is)",
        )
    left = list(stop.files)
    if not left:
        public = set(await s.pipeline.made_public(state)) | set(state.public_before)
        left = [f.path for f in plan.files if f.target not in public]
    kept = tuple(f for f in plan.files if f.path not in set(left))
    return (
        replace(plan, files=kept),
        f"finish without {listing(left)} (not registered, not announced; stage "
        f"{'it' if len(left) == 1 else 'them'} again as late files)",
    )


async def _restaged_index(
    s: Services, state: ReleaseState, plan: PublishPlan
) -> tuple[tuple[PlanFile, ...], tuple[str, ...]]:
    """The install index and catalog staged again since the confirmation and claimed by
    their role, as plan files replacing the live ones as they are now, and the releases it
    is shared with; no files when staging still holds the confirmed ones. Raises
    :class:`Refusal` when the staged ones cannot be published (not claimed, or the index
    check refuses them)."""
    tag, replacing = state.tag, plan.replacements
    listing_now = await s.observer.list(tag)
    paths = [f.path for f in replacing]
    if any(p not in listing_now or not listing_now[p].regular for p in paths):
        return (), ()
    digests = await s.observer.digest(tag, listing_now, paths, fresh=True)
    if all(digests[f.path] == f.sha256 for f in replacing):
        return (), ()
    role = replacing[0].role
    claim = state.claims.get(role)
    claimed = {f.path: f.sha256 for f in claim.snapshot} if claim is not None else {}
    if any(claimed.get(p) != digests[p] for p in paths):
        raise Refusal(  # the index and its catalog: always two files
            f"{listing(paths)} in staging are not the confirmed ones and not claimed yet: say "
            f"/ready {role} {tag} first, then /publish {tag}."
        )
    inspector = s.observer.index
    assert inspector is not None  # the plan replaces live files: the profile has an index
    neighbours = s.observer.neighbours_of(tag)  # a re-staged index may be a shared one
    check = await asyncio.to_thread(
        functools.partial(inspector.check, tag, listing_now, fresh=True, neighbours=neighbours)
    )
    if check is None or check.verdict.blockers:
        why = "; ".join(check.verdict.blockers) if check else "its role takes no part"
        raise Refusal(f"The re-staged index of {tag} cannot be published: {why}.")
    files = tuple(
        replace(
            f,
            size=listing_now[f.path].size,
            sha256=digests[f.path],
            replaces=check.live[f.target],  # the check reads both live files
        )
        for f in replacing
    )
    return files, check.verdict.shared_with
