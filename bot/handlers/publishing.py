"""``/publish TAG``, ``/publish TAG confirm CODE [LOGIN]`` and ``/abort TAG``: an RM's plan
(with a Sigstore login when files must be signed), its confirmation (the login checked, the
files frozen, then the pipeline, which signs them first) and cancelling it while nothing is
public."""

from __future__ import annotations

import asyncio
import logging

from bot import announcing, index_publishing
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
from bot.errors import StorageError
from bot.messages import ConfirmPrompt, Reply, Tone
from bot.pinning import listing
from bot.refusals import CodeRefused, Refusal, refuse_unless
from bot.render import plan_text, when
from bot.services import Services
from bot.sign_step import SIGNING_FAILED

log = logging.getLogger(__name__)


async def publish(s: Services, person: str, command: cmd.Publish, state: ReleaseState) -> Reply:
    """Offer the plan and a confirmation code (stored hashed) that expires; when files must
    be signed, a Sigstore login too (its verifier kept in memory only)."""
    tag = command.tag
    refuse_unless(authority.may_publish(s.team, person, tag))
    plan = await s.publishable_plan(tag, state)
    signing = await s.signing.offer(plan)
    code = s.new_code()
    timeout = s.config.model.confirm_timeout
    s.store.append(
        tag,
        person,
        EventKind.PLANNED,
        code_hash=hash_code(code),
        expires_at=s.clock() + timeout,
        plan=plan_to_json(plan),
        status=s.profile.status(tag),
        sign=list(signing.to_sign) if signing else [],
        signer=list(signing.signer) if signing else None,
    )
    if signing is not None:
        s.logins.offer(tag, hash_code(code), signing.login)
    prompt = ConfirmPrompt(str(tag), code, signing.login.link if signing else None)
    notes = tuple(announcing.plan_notes(s.config, s.conn, plan, state))
    text = plan_text(plan, max(1, timeout // 60), prompt.shown, notes)
    if signing is not None:
        text = _before_last_line(text, signing.text(tag))
    elif not s.signing.required(tag):
        opted_out = s.config.model.signatures.require is False
        why = " ([signatures] require = false)" if opted_out else ""
        text = _before_last_line(text, f"Signatures: not required for {tag}{why}.")
    return Reply(text, plan=plan, confirm=prompt, notes=notes)


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
    plan = await s.publishable_plan(tag, state)
    if plan.digest != state.offer.plan.digest:
        changed = plan_difference(state.offer.plan, plan)
        raise Refusal(
            f"Staging changed since the plan ({changed}); nothing was published, {again}."
        )
    if trouble := await s.reporter.storage_trouble():
        raise Refusal(f"{trouble} Nothing was published.")
    # The login is checked before anything moves: a wrong identity changes nothing.
    handover = None
    if command.login is not None:
        handover = await s.signing.accept(tag, code_hash, command.login)
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
    verified = await freeze(s, person, tag, plan, again)
    if handover is not None:
        s.logins.hand_over(tag, handover)
    await s.pipeline.run(s.store.release(tag), verified=verified)
    done = s.store.release(tag)
    published = len(done.public_files) - len(state.public_files)
    if not published and done.publishing is None and (why := _signing_failure(s, tag)):
        return Reply(
            f"Publishing {tag} was called off before anything became public: {why} Type "
            f"/publish {tag} for a new plan, then confirm again.",
            Tone.REFUSAL,
            refusal="publish_stopped",
        )
    if not published:  # stopped at a step (or undone by it): the channel has the reason
        return Reply(
            f"Publishing {tag} did not finish; the channel has the reason and it "
            "resumes by itself once the cause is fixed.",
            Tone.REFUSAL,
            refusal="publish_stopped",
        )
    return Reply(f"Published {tag}: {published} files are public.", Tone.SUCCESS)


def _signing_failure(s: Services, tag: ReleaseTag) -> str:
    """Why signing called the publish of ``tag`` off, as a sentence ("" if it did not)."""
    aborted = [e for e in s.store.events(tag) if e.kind is EventKind.ABORTED]
    reason = str(aborted[-1].data.get("reason", "")) if aborted else ""
    if not reason.startswith(SIGNING_FAILED):
        return ""
    return f"{reason[0].upper()}{reason[1:].rstrip('.')}."


async def freeze(s: Services, person: str, tag: ReleaseTag, plan: PublishPlan, again: str) -> bool:
    """Move the confirmed files out of the uploaders' reach and hash them there (the
    confirmation's fresh hash). True when they are exactly the plan; a difference puts
    them back and refuses. A storage fault leaves the freeze to the resumed promotion."""
    storage = s.conn.storage
    try:
        problems = await asyncio.to_thread(storage.freeze, plan)
    except StorageError as err:
        log.warning("freezing %s failed: %s", tag, err)
        return False
    if not problems:
        return True
    try:
        clashes = await asyncio.to_thread(storage.thaw, plan)
    except StorageError as err:  # the publish stays pinned and stopped: /abort retries
        raise Refusal(
            f"Staging changed since the plan ({', '.join(problems)}); nothing was "
            f"published, but putting the files back failed ({err}); /abort {tag} retries."
        ) from err
    reason = f"staging changed since the plan ({', '.join(problems)})"
    s.store.append(tag, person, EventKind.ABORTED, reason=reason)
    kept = f"; {listing(clashes)} stayed frozen (a newer upload has its name)" if clashes else ""
    raise Refusal(
        f"Staging changed since the plan ({', '.join(problems)}); nothing was "
        f"published{kept}, {again}."
    )


async def abort(s: Services, person: str, command: cmd.Abort, state: ReleaseState) -> Reply:
    """Put a confirmed publish's files back in staging, while none of them is public."""
    tag = command.tag
    refuse_unless(authority.may_abort(s.team, person, tag))
    plan = state.publishing
    if plan is None:
        raise Refusal(f"{tag} has no confirmed publish to abort.")
    public = await s.pipeline.made_public(state)
    if public:
        raise Refusal(
            f"Publishing {tag} cannot be aborted: {listing(public)} "
            f"{'is' if len(public) == 1 else 'are'} public already, and published files "
            "are never taken back."
        )
    clashes = await asyncio.to_thread(s.conn.storage.thaw, plan)
    await asyncio.to_thread(index_publishing.put_back, s.conn.storage, plan)
    s.store.append(tag, person, EventKind.ABORTED, reason=f"aborted by {person} with /abort")
    s.reporter.clear_trouble(tag)
    kept = (
        f"; {listing(clashes)} stayed in the bot's frozen area because a different file "
        "with that name was uploaded since"
        if clashes
        else ""
    )
    await s.reporter.notice(tag, f"{person} aborted the publish of {tag}; nothing was made public.")
    await s.refresh(tag)
    return Reply(
        f"Publishing {tag} was aborted: its files are back in staging{kept}; claims are "
        f"unchanged and /publish {tag} works again.",
        Tone.SUCCESS,
    )


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
    return ", ".join(sorted(changes)) or "files changed"
