"""``/publish TAG``, ``/publish TAG confirm CODE [LOGIN]`` and ``/abort TAG``: an RM's plan
(with a Sigstore login when files must be signed), its confirmation (the login checked and
journaled, then the pipeline: the bot's copies first, signed when files must be) and
cancelling it while nothing is public. While a publish that made files public is stopped, the
same two commands are its way out (:mod:`bot.service.handlers.finishing`)."""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import replace

from bot.domain import authority
from bot.domain import commands as cmd
from bot.domain.confirmation import (
    CodeFault,
    CodeProblem,
    check_code,
    hash_code,
    login_refusal,
)
from bot.domain.history import EventKind, Offer, ReleaseState, plan_to_json
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.domain.text import listing
from bot.ports.messages import ConfirmPrompt, Reply, Tone
from bot.service.handlers import finishing
from bot.service.pipeline import announcing
from bot.service.refusals import CodeRefused, Refusal, refuse_unless
from bot.service.render import count, plan_text, when
from bot.service.services import Services
from bot.service.signing_offer import SigningOffer
from bot.service.stops import stop_text

log = logging.getLogger(__name__)


async def publish(s: Services, person: str, command: cmd.Publish, state: ReleaseState) -> Reply:
    """Offer the plan and a confirmation code (stored hashed) that expires; when files must
    be signed, a Sigstore login too (its verifier kept in memory only)."""
    tag = command.tag
    refuse_unless(authority.may_publish(s.team, person, tag))
    if state.publishing is not None:  # stopped with files public: the way to finish it
        assert state.stopped is not None
        plan, what = await finishing.finishing_plan(s, state)
        prompt, minutes = _offer(s, person, plan, None)
        within = count(minutes, "minute")
        return Reply(
            f"{stop_text(tag, state.stopped)}\nTo {what}, confirm within {within}: {prompt.shown}",
            plan=plan,
            confirm=prompt,
        )
    plan = await s.publishable_plan(tag, state)
    signing = await s.signing.offer(plan)
    prompt, minutes = _offer(s, person, plan, signing)
    notes = tuple(announcing.plan_notes(s.config, s.conn, plan, state))
    text = plan_text(plan, minutes, prompt.shown, notes)
    if signing is not None:
        text = _before_last_line(text, signing.text())
    elif not s.signing.required(tag):
        opted_out = s.config.model.signatures.require is False
        why = " ([signatures] require = false)" if opted_out else ""
        text = _before_last_line(text, f"Signatures: not required for {tag}{why}.")
    return Reply(text, plan=plan, confirm=prompt, notes=notes)


def _offer(
    s: Services, person: str, plan: PublishPlan, signing: SigningOffer | None
) -> tuple[ConfirmPrompt, int]:
    """Journal ``plan`` as offered to ``person`` with a new confirmation code (stored
    hashed) that expires, and its login when files must be signed; the prompt to confirm
    it with, and the minutes it is valid."""
    code = s.new_code()
    timeout = s.config.model.confirm_timeout
    s.store.append(
        plan.tag,
        person,
        EventKind.PLANNED,
        code_hash=hash_code(code),
        expires_at=s.clock() + timeout,
        plan=plan_to_json(plan),
        status=s.profile.status(plan.tag),
        sign=list(signing.to_sign) if signing else [],
        signer=list(signing.signer) if signing else None,
    )
    if signing is not None:
        s.logins.offer(plan.tag, hash_code(code), signing.login)
    prompt = ConfirmPrompt(str(plan.tag), code, signing.login.link if signing else None)
    return prompt, max(1, timeout // 60)


def _before_last_line(text: str, insert: str) -> str:
    """``insert`` before the plan's last line (the line to type stays last)."""
    head, _, last = text.rpartition("\n")
    return f"{head}\n{insert}\n{last}"


def code_refusal(tag: ReleaseTag, problem: CodeProblem, live: Offer | None = None) -> str:
    """The one sentence refusing a confirmation code; ``live``: the plan whose own code the
    person can still use (a mistyped code, or one copied from an example)."""
    again = f"type /publish {tag} for a new plan"
    if problem.fault is CodeFault.UNKNOWN and live is not None:
        return (
            f"That confirmation code is not valid for {tag}; use the code your plan printed "
            f"(valid until {when(live.expires_at)}), or {again}."
        )
    match problem.fault:
        case CodeFault.SPENT:
            return f"That confirmation code was {problem.why}; {again}."
        case CodeFault.NOT_YOURS:
            return (
                f"That confirmation code was issued to {problem.holder}; only they can "
                f"use it ({again} of your own)."
            )
        case CodeFault.EXPIRED:
            return f"That confirmation code expired at {when(problem.expired_at)}; {again}."
    return f"That confirmation code is not valid for {tag}; {again}."


async def confirm(s: Services, person: str, command: cmd.Confirm, state: ReleaseState) -> Reply:
    """Check the code and that staging still is the plan, journal the confirmation, freeze
    the files and run the pipeline."""
    tag = command.tag
    refuse_unless(authority.may_publish(s.team, person, tag))
    code_hash = hash_code(command.code)
    again = f"type /publish {tag} for a new plan"
    problem = check_code(state.offer, state.spent_codes, code_hash, person, s.clock())
    if problem is not None:
        offer = state.offer
        mine = offer is not None and offer.person == person and s.clock() <= offer.expires_at
        raise CodeRefused(code_refusal(tag, problem, offer if mine else None))
    assert state.offer is not None
    refuse_unless(login_refusal(str(tag), len(state.offer.to_sign), command.login), Refusal)
    finishing_publish = state.publishing is not None
    if finishing_publish:
        plan, _ = await finishing.finishing_plan(s, state)
    else:
        plan = await s.publishable_plan(tag, state)
    if plan.digest != state.offer.plan.digest:
        changed = plan_difference(state.offer.plan, plan)
        raise Refusal(
            f"Staging changed since the plan ({changed}); nothing was published, {again}."
        )
    if trouble := await s.reporter.storage_trouble():
        raise Refusal(f"{trouble} Nothing was published.")
    # The login is checked before anything is journaled: a wrong identity changes nothing.
    handover = None
    if command.login is not None:
        handover = await s.signing.accept(tag, code_hash, command.login)
    if finishing_publish:
        await _copy_restaged(s, tag, plan)
        assert state.publishing is not None
        left = sorted({f.path for f in state.publishing.files} - {f.path for f in plan.files})
        s.store.append(
            tag,
            person,
            EventKind.CONFIRMED,
            code_hash=code_hash,
            digest=plan.digest,
            finishing=True,
            left_out=left,
        )
    else:
        # Journal the confirmation first: from here on, every resume pins to this plan.
        before = await asyncio.to_thread(s.conn.storage.in_public, plan)
        s.store.append(
            tag,
            person,
            EventKind.CONFIRMED,
            code_hash=code_hash,
            digest=plan.digest,
            public_before=before,
        )
    if handover is not None:
        s.logins.hand_over(tag, handover)
    s.reporter.clear_trouble(tag)
    outcome = await s.pipeline.run(s.store.release(tag), answered=True)
    if outcome.published:
        return Reply(outcome.text, Tone.SUCCESS)
    # Undone by itself (nothing public), its text says so; else it waits or stopped.
    text = outcome.text if outcome.aborted else f"Publishing {tag} did not finish. {outcome.text}"
    return Reply(
        text,
        Tone.REFUSAL,
        refusal="publish_stopped",
    )


async def _copy_restaged(s: Services, tag: ReleaseTag, plan: PublishPlan) -> None:
    """A finishing plan with a re-staged index: the bot copies it now, as at any
    confirmation (the pipeline's freeze is done already). The freeze keeps every intact copy
    it made before, so only what changed is copied, and a damaged copy is made again from
    staging, checked against the plan's SHA-256."""
    problems = await asyncio.to_thread(
        functools.partial(
            s.conn.storage.freeze, replace(plan, files=plan.replacements), fresh=False
        )
    )
    if problems:
        raise Refusal(
            f"Staging changed since the plan ({', '.join(problems)}); nothing was published, "
            f"type /publish {tag} for a new plan."
        )


async def abort(s: Services, person: str, command: cmd.Abort, state: ReleaseState) -> Reply:
    """Cancel a confirmed publish while none of it is public: journaled first, then the
    bot's copies are dropped (staging was never touched)."""
    tag = command.tag
    refuse_unless(authority.may_abort(s.team, person, tag))
    plan = state.publishing
    if plan is None:
        raise Refusal(f"{tag} has no confirmed publish to abort.")
    if state.aborting is None:
        public = await s.pipeline.made_public(state)
        if public:
            way_out = f" {s.reporter.trouble(tag)}" if state.stopped is not None else ""
            raise Refusal(
                f"Publishing {tag} cannot be aborted: {listing(public)} "
                f"{'is' if len(public) == 1 else 'are'} public already, and published files "
                f"are never taken back.{way_out}"
            )
        # Journaled before anything is touched: a restart finishes the abort, never the
        # publish.
        s.store.append(tag, person, EventKind.ABORTING, reason=f"aborted by {person} with /abort")
        state = s.store.release(tag)
    text = await s.pipeline.abort(state, person)
    await s.refresh(tag)
    return Reply(text, Tone.SUCCESS)


def plan_difference(old: PublishPlan, new: PublishPlan) -> str:
    """What differs between the plan offered and the plan staging gives now."""
    before = {f.path: f for f in old.files}
    after = {f.path: f for f in new.files}
    changes = [f"{p} added" for p in after.keys() - before.keys()]
    changes += [f"{p} removed" for p in before.keys() - after.keys()]
    changes += [
        f"the live {after[p].target} changed"
        if before[p].replaces != after[p].replaces
        else f"{p} changed"
        for p in before.keys() & after.keys()
        if before[p] != after[p]
    ]
    if old.waivers != new.waivers:
        changes.append("waivers changed")
    if old.announcement != new.announcement:
        changes.append("the announcement changed")
    # Never empty: two digests differ only where a file, the waivers or the announcement do.
    return ", ".join(sorted(changes))
