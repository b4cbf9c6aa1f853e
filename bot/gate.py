"""The gate: the service layer. One method per command; it authorizes, reads and writes the
event log, calls the ports, and returns platform-neutral messages.

Every refusal is one sentence and changes nothing. Commands and scans of one release are
serialized by a per-release lock; storage, signature and registry calls run in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from bot import index_publishing
from bot.config import Config
from bot.domain import commands as cmd
from bot.domain import late
from bot.domain.files import Listing, SnapshotFile, changed_since, needs_digest
from bot.domain.history import EventKind, ReleaseState, plan_to_json
from bot.domain.plan import PublishPlan, make_plan
from bot.domain.readiness import Readiness, compute_readiness
from bot.domain.signing import BUNDLE_SUFFIX, SignatureResult, SignatureStatus, sign_command
from bot.domain.tags import ReleaseTag
from bot.domain.waivers import WaiverError, resolve_target
from bot.errors import (
    PromotionConflict,
    RegistryError,
    RelbotError,
    StagingUnreachable,
    StorageError,
    StorageLocked,
)
from bot.index_publishing import IndexCheck, IndexInspector
from bot.messages import ChannelKind, ChannelMessage, ConfirmPrompt, Reply, Tone
from bot.metrics import Metrics
from bot.pinning import ALLOWED_WHILE_PUBLISHING, busy_refusal, listing, public_folders
from bot.ports import Chat, Journal, Purger, Registry, SignatureVerifier, Storage
from bot.release_locks import ReleaseLocks
from bot.render import count, help_text, plan_text, size_text, summary_text, when
from bot.storage.listing import RELEASE_FOLDER
from bot.storage.lock import StorageLease
from bot.team import Team

log = logging.getLogger(__name__)

BOT = "relbot"  # the actor of events the bot causes itself (a scan withdrawing a claim)
CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
CODE_LENGTH = 8
MAX_BUNDLE = 1 << 20  # a Sigstore bundle is a few kB; anything this big is not one
PIPELINE = ("promote", "register", "purge", "announce")


class Refusal(RelbotError):
    """A command that cannot be carried out; the message is the one-sentence reply."""


class NotAllowed(Refusal):
    """The person lacks the role or the RM rights the command needs."""


class CodeRefused(Refusal):
    """A confirmation code that is wrong, spent, expired or issued to someone else."""


@dataclass
class _Observation:
    """What the bot last saw of a release's staging folder, and what it told the channel."""

    listing: Listing | None = None
    previous: Listing | None = None  # the listing before ``listing`` (says what was growing)
    public: Listing | None = None  # a published release's public files, as staging paths
    signatures: tuple[SignatureResult, ...] = ()
    preflight: tuple[float, str] | None = None  # (when, python.org's objection or "")
    index: IndexCheck | None = None  # the staged install index, last checked
    pipeline_trouble: str = ""  # the last reason a publish stopped, told to the channel
    summary_ref: str | None = None
    summary_text: str = ""
    publishable: bool | None = None  # None until first seen: a restart calls nobody


@dataclass(frozen=True)
class Observed:
    """A release as the bot last saw it, for read-only views (the board): the state folded
    from the log now, readiness from the last listing a scan or command took, and why
    ``/publish`` would refuse (empty: it would offer a plan)."""

    state: ReleaseState
    readiness: Readiness | None  # None once published, or before staging was first listed
    digests: Mapping[str, str]  # SHA-256 of staged files hashed while unchanged since
    blockers: tuple[str, ...]


@dataclass
class _Health:
    unreachable_since: float | None = None
    skip_scans: int = 0
    failures: int = 0


def hash_code(code: str) -> str:
    """Codes are stored hashed: the audit trail never shows a usable code."""
    return hashlib.sha256(code.encode()).hexdigest()


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


class Gate:
    def __init__(
        self,
        config: Config,
        store: Journal,
        storage: Storage,
        chat: Chat,
        *,
        registry: Registry | None = None,
        verifier: SignatureVerifier | None = None,
        purger: Purger | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        settle_seconds: float = 1.0,
        code_factory: Callable[[], str] = new_code,
    ) -> None:
        self.config = config
        self.profile = config.profile
        self.team = Team(config.people)
        self.store = store
        self.storage = storage
        self.chat = chat
        self.registry = registry
        self.verifier = verifier
        self.purger = purger
        self._require_signatures = config.model.signatures.require
        self._bundles: dict[tuple[str, str], tuple[tuple[int, float], bytes]] = {}
        self._clock = clock
        self._sleep = sleep
        self._settle = settle_seconds
        self._new_code = code_factory
        self._locks = ReleaseLocks()
        self._public_locks: dict[str, asyncio.Lock] = {}  # per public folder: one promotion
        self._seen: dict[str, _Observation] = {}
        self._digests: dict[tuple[str, str], tuple[tuple[int, float], str]] = {}
        self._health = _Health()
        self.metrics = Metrics()
        self.lease: StorageLease | None = None  # the storage lock, held by `relbot run`
        self._lease_trouble = ""
        self._index = IndexInspector.for_profile(storage, self.profile)

    # -- entry points ------------------------------------------------------------------------

    async def handle(self, platform: str, user: str, text: str) -> Reply:
        """Answer one chat line from ``user`` on ``platform``. Always exactly one reply."""
        reply = await self._answer(platform, user, text)
        if reply.private:
            self.metrics.refused(reply.refusal)
        return reply

    async def _answer(self, platform: str, user: str, text: str) -> Reply:
        try:
            command = cmd.parse_command(text, self.profile.roles)
        except cmd.CommandError as err:
            return Reply(str(err), Tone.REFUSAL, refusal="syntax")
        verb = type(command).__name__.lower()
        self.metrics.commands[verb] = self.metrics.commands.get(verb, 0) + 1
        if isinstance(command, cmd.Help):
            return Reply(help_text(self.profile.roles, command.topic))
        if isinstance(command, cmd.Status):
            try:
                return await self._status(command.tag)
            except StorageError as err:
                return Reply(f"{err} Try /status again shortly.", Tone.REFUSAL, refusal="storage")
        person = self.team.identify(platform, user)
        tag = command.tag
        if person is None:
            # Logged, not audited: strangers must not be able to grow a release's history.
            log.info("refused a %s command from %s user %r: not on the team", verb, platform, user)
            return Reply(
                f"You are not on the release team ({platform} user {user}); ask an admin to "
                "add your ID to relbot's config.",
                Tone.REFUSAL,
                refusal="not_on_team",
            )
        async with self._lock(tag):
            try:
                return await self._dispatch(person, command)
            except Refusal as err:
                return self._refuse(tag, person, text, str(err), why=_refusal_reason(err))
            except StorageError as err:
                return Reply(
                    f"{err} Nothing was changed; try again shortly.",
                    Tone.REFUSAL,
                    refusal="storage",
                )

    async def scan(self) -> None:
        """One scheduled pass over every open release: one listing per folder, digests only
        for changed files, a channel update only when something changed."""
        if self._health.skip_scans > 0:
            self._health.skip_scans -= 1
            return
        started = time.perf_counter()
        try:
            await self._storage_trouble()  # the heartbeat of the storage lock
            tags = await self.open_tags()
            for tag in tags:
                async with self._lock(tag):
                    try:
                        await self._scan_release(tag)
                    except StagingUnreachable:
                        raise
                    except StorageError as err:  # one release's trouble: scan the others
                        self.metrics.scan_failures += 1
                        log.warning("scan of %s failed: %s", tag, err)
        except StorageError as err:
            self.metrics.scan_failures += 1
            await self._staging_down(err)
            return
        self.metrics.scanned(time.perf_counter() - started, self._clock())
        await self._staging_up()
        await self.resume()

    async def resume(self) -> None:
        """Finish publishes that a crash or an outage interrupted (the journal says where)."""
        for tag in self.store.open_tags():
            state = self.store.release(tag)
            if state.publishing is not None and not state.holds:
                async with self._lock(tag):
                    state = self.store.release(tag)
                    # A hold pauses a stuck publish: nothing more becomes public until /unhold.
                    if state.publishing is not None and not state.holds:
                        await self._run_pipeline(state)

    # -- commands ----------------------------------------------------------------------------

    async def _dispatch(self, person: str, command: cmd.Command) -> Reply:
        tag = command.tag if not isinstance(command, cmd.Help | cmd.Status) else None
        assert tag is not None
        if not self.team.rms_of(tag.branch):
            raise Refusal(
                f"No release manager is configured for {tag.branch}; add the branch to a "
                "person's rm list in the config first."
            )
        state = self.store.release(tag)
        if (
            state.is_published
            and state.published_at is not None
            and state.publishing is None
            and not await self._late(tag)
        ):
            raise Refusal(
                f"{tag} is already published (by {state.published_by} at "
                f"{when(state.published_at)}); nothing to change."
            )
        if state.publishing is not None and not isinstance(command, ALLOWED_WHILE_PUBLISHING):
            raise Refusal(busy_refusal(tag, self._observation(tag).pipeline_trouble))
        match command:
            case cmd.Ready():
                return await self._ready(person, command, state)
            case cmd.Unready():
                return await self._unready(person, command, state)
            case cmd.Hold():
                return await self._hold(person, command, state)
            case cmd.Unhold():
                return await self._unhold(person, command, state)
            case cmd.Publish():
                return await self._publish(person, tag, state)
            case cmd.Confirm():
                return await self._confirm(person, command, state)
            case cmd.Respin():
                return await self._respin(person, tag, state)
            case cmd.Waive():
                return await self._waive(person, command, state)
            case cmd.Unwaive():
                return await self._unwaive(person, command, state)
            case cmd.Abort():
                return await self._abort(person, tag, state)
        raise AssertionError(f"unhandled command {command!r}")

    async def _ready(self, person: str, command: cmd.Ready, state: ReleaseState) -> Reply:
        role, tag = command.role, command.tag
        if not self.team.has_role(person, role):
            held = ", ".join(self.team.roles_of(person)) or "no role"
            raise NotAllowed(
                f"Only people holding the {role} role can say it is ready; you hold {held}."
            )
        if role not in self.profile.roles_for(tag):
            raise Refusal(
                f"{role} is not part of {tag} (the {self.profile.name} profile has it "
                "for other kinds of release only)."
            )
        readiness, listing = await self._observe(tag, state, settle=True)
        role_state = readiness.role(role)
        if role_state.problems:
            where = self.storage.staging_location(tag)
            listed = ", ".join(f.describe() for f in role_state.problems)
            raise Refusal(
                f"{role} is not ready for {tag}: {listed}; fix them in {where} and "
                f"say /ready {role} {tag} again."
            )
        paths = [f.path for f in role_state.present]
        digests = await self._digest(tag, listing, paths)
        snapshot = [
            SnapshotFile(p, listing[p].size, listing[p].mtime, digests[p]).to_json() for p in paths
        ]
        self.store.append(tag, person, EventKind.CLAIMED, role=role, snapshot=snapshot)
        state = self.store.release(tag)
        readiness = self._readiness(tag, listing, self._seen_listing(tag), state)
        await self._refresh_summary(readiness, state)
        size = size_text(sum(listing[p].size for p in paths))
        return Reply(
            f"{role} is ready for {tag}: {count(len(paths), 'file')} ({size}) recorded. "
            f"{readiness.claimed_roles} of {len(readiness.roles)} roles ready.",
            Tone.SUCCESS,
        )

    async def _unready(self, person: str, command: cmd.Unready, state: ReleaseState) -> Reply:
        role, tag = command.role, command.tag
        if not (self.team.has_role(person, role) or self.team.is_rm(person, tag.branch)):
            raise NotAllowed(f"Only a {role} person or an RM of {tag.branch} can withdraw {role}.")
        if role not in state.claims:
            raise Refusal(f"{role} has no claim on {tag} to withdraw.")
        reason = f"withdrawn by {person} with /unready"
        claimer = state.claims[role].person
        self.store.append(tag, person, EventKind.WITHDRAWN, role=role, reason=reason)
        others = [claimer] if claimer != person else []  # tell whoever claimed it
        await self._notice(tag, f"{person} withdrew {role} from {tag}.", mentions=others)
        await self._refresh(tag)
        return Reply(f"{role} is no longer ready for {tag}.", Tone.SUCCESS)

    async def _hold(self, person: str, command: cmd.Hold, state: ReleaseState) -> Reply:
        tag = command.tag
        if tag not in self.store.open_tags() and (
            await asyncio.to_thread(self.storage.list_staging, tag) is None
        ):
            # A hold on a typo (3.14.11) would make a release that is listed for ever.
            raise Refusal(
                f"{tag} is not a release anyone has staged or acted on; check the tag "
                "(/status lists the open releases)."
            )
        if person in state.holds:
            raise Refusal(f"You already hold {tag}; /unhold {tag} lifts it.")
        self.store.append(tag, person, EventKind.HELD, reason=command.reason)
        why = f": {command.reason}" if command.reason else ""
        await self._notice(tag, f"{person} put {tag} on hold{why}. /unhold {tag} lifts it.")
        await self._refresh(tag)
        return Reply(f"{tag} is on hold; nothing is published until /unhold {tag}.", Tone.SUCCESS)

    async def _unhold(self, person: str, command: cmd.Unhold, state: ReleaseState) -> Reply:
        tag = command.tag
        if not state.holds:
            raise Refusal(f"{tag} is not on hold.")
        if self.team.is_rm(person, tag.branch):
            lifted = list(state.holds)
        elif person in state.holds:
            lifted = [person]
        else:
            holders = ", ".join(state.holds)
            raise NotAllowed(
                f"{tag} is held by {holders}; only they or an RM of {tag.branch} can lift it."
            )
        for holder in lifted:
            self.store.append(tag, person, EventKind.UNHELD, holder=holder)
        await self._notice(tag, f"{person} lifted the hold on {tag}.")
        await self._refresh(tag)
        return Reply(f"{tag} is no longer on hold.", Tone.SUCCESS)

    async def _publish(self, person: str, tag: ReleaseTag, state: ReleaseState) -> Reply:
        self._require_rm(person, tag, "publish")
        plan = await self._publishable_plan(tag, state)
        code = self._new_code()
        expires = self._clock() + self.config.model.confirm_timeout
        self.store.append(
            tag,
            person,
            EventKind.PLANNED,
            code_hash=hash_code(code),
            expires_at=expires,
            plan=plan_to_json(plan),
        )
        prompt = ConfirmPrompt(str(tag), code)
        minutes = max(1, self.config.model.confirm_timeout // 60)
        return Reply(plan_text(plan, minutes, prompt.line), plan=plan, confirm=prompt)

    async def _confirm(self, person: str, command: cmd.Confirm, state: ReleaseState) -> Reply:
        tag = command.tag
        self._require_rm(person, tag, "publish")
        offer, code_hash = state.offer, hash_code(command.code)
        again = f"type /publish {tag} for a new plan"
        if offer is None or offer.code_hash != code_hash:
            why = state.spent_codes.get(code_hash)
            if why is not None:
                raise CodeRefused(f"That confirmation code was {why}; {again}.")
            raise CodeRefused(f"That confirmation code is not valid for {tag}; {again}.")
        if offer.person != person:
            raise CodeRefused(
                f"That confirmation code was issued to {offer.person}; only they can "
                f"use it ({again} of your own)."
            )
        if self._clock() > offer.expires_at:
            raise CodeRefused(
                f"That confirmation code expired at {when(offer.expires_at)}; {again}."
            )
        plan = await self._publishable_plan(tag, state)
        if plan.digest != offer.plan.digest:
            changed = _plan_difference(offer.plan, plan)
            raise Refusal(
                f"Staging changed since the plan ({changed}); nothing was published, {again}."
            )
        if trouble := await self._storage_trouble():
            raise Refusal(f"{trouble} Nothing was published.")
        # Journal the confirmation first: from here on, every resume pins to this plan.
        before = await asyncio.to_thread(self.storage.in_public, plan)
        self.store.append(
            tag,
            person,
            EventKind.CONFIRMED,
            code_hash=code_hash,
            digest=plan.digest,
            public_before=before,
        )
        verified = await self._freeze(person, tag, plan, again)
        await self._run_pipeline(self.store.release(tag), verified=verified)
        done = self.store.release(tag)
        if len(done.public_files) == len(state.public_files):  # not (yet) published
            return Reply(
                f"Publishing {tag} did not finish; the channel has the reason and it "
                "resumes by itself once the cause is fixed.",
                Tone.REFUSAL,
                refusal="publish_stopped",
            )
        return Reply(f"Published {tag}: {len(plan.files)} files are public.", Tone.SUCCESS)

    async def _freeze(self, person: str, tag: ReleaseTag, plan: PublishPlan, again: str) -> bool:
        """Move the confirmed files out of the uploaders' reach and hash them there (the
        confirmation's fresh hash). True when they are exactly the plan; a difference puts
        them back and refuses. A storage fault leaves the freeze to the resumed promotion."""
        try:
            problems = await asyncio.to_thread(self.storage.freeze, plan)
        except StorageError as err:
            log.warning("freezing %s failed: %s", tag, err)
            return False
        if not problems:
            return True
        try:
            clashes = await asyncio.to_thread(self.storage.thaw, plan)
        except StorageError as err:  # the publish stays pinned and stopped: /abort retries
            raise Refusal(
                f"Staging changed since the plan ({', '.join(problems)}); nothing was "
                f"published, but putting the files back failed ({err}); /abort {tag} retries."
            ) from err
        reason = f"staging changed since the plan ({', '.join(problems)})"
        self.store.append(tag, person, EventKind.ABORTED, reason=reason)
        kept = (
            f"; {listing(clashes)} stayed frozen (a newer upload has its name)" if clashes else ""
        )
        raise Refusal(
            f"Staging changed since the plan ({', '.join(problems)}); nothing was "
            f"published{kept}, {again}."
        )

    async def _abort(self, person: str, tag: ReleaseTag, state: ReleaseState) -> Reply:
        self._require_rm(person, tag, "abort the publish of")
        plan = state.publishing
        if plan is None:
            raise Refusal(f"{tag} has no confirmed publish to abort.")
        public = await self._made_public(state)
        if public:
            raise Refusal(
                f"Publishing {tag} cannot be aborted: {listing(public)} "
                f"{'is' if len(public) == 1 else 'are'} public already, and published files "
                "are never taken back."
            )
        clashes = await asyncio.to_thread(self.storage.thaw, plan)
        await asyncio.to_thread(index_publishing.put_back, self.storage, plan)
        self.store.append(tag, person, EventKind.ABORTED, reason=f"aborted by {person} with /abort")
        self._observation(tag).pipeline_trouble = ""
        kept = (
            f"; {listing(clashes)} stayed in the bot's frozen area because a different file "
            "with that name was uploaded since"
            if clashes
            else ""
        )
        await self._notice(tag, f"{person} aborted the publish of {tag}; nothing was made public.")
        await self._refresh(tag)
        return Reply(
            f"Publishing {tag} was aborted: its files are back in staging{kept}; claims are "
            f"unchanged and /publish {tag} works again.",
            Tone.SUCCESS,
        )

    async def _made_public(self, state: ReleaseState) -> list[str]:
        """Planned targets this publish has made public (those public before do not count).
        When storage cannot tell, assume something is: abort must never half-undo."""
        assert state.publishing is not None
        if "promote" in state.steps_done:
            return [f.target for f in state.publishing.files]
        try:
            present = await asyncio.to_thread(self.storage.in_public, state.publishing)
        except StorageError as err:
            raise Refusal(f"Cannot tell what is public yet: {err}") from err
        before = set(state.public_before)
        return [t for t in present if t not in before]

    async def _respin(self, person: str, tag: ReleaseTag, state: ReleaseState) -> Reply:
        self._require_rm(person, tag, "re-spin")
        if not state.claims and state.offer is None:
            raise Refusal(f"{tag} has no claim or pending confirmation to withdraw.")
        for role in state.claims:
            reason = f"re-spin started by {person}"
            self.store.append(tag, person, EventKind.WITHDRAWN, role=role, reason=reason)
        if state.offer is not None:
            self.store.append(tag, person, EventKind.PLAN_DROPPED, reason="withdrawn by a re-spin")
        await self._notice(
            tag,
            f"{person} started a re-spin of {tag}: every claim is withdrawn; "
            f"say /ready ROLE {tag} again once the new files are staged.",
        )
        await self._refresh(tag)
        self._forget_files(tag)  # new files are coming: the old ones' hashes are dead weight
        return Reply(
            f"Re-spin of {tag}: claims and pending confirmation withdrawn; staging was "
            "left as it is.",
            Tone.SUCCESS,
        )

    async def _waive(self, person: str, command: cmd.Waive, state: ReleaseState) -> Reply:
        tag, target = command.tag, command.target
        self._require_rm(person, tag, "waive rules for")
        if target in state.waivers:
            raise Refusal(
                f"{target} is already waived for {tag}; /unwaive {tag} {target} undoes it."
            )
        staged = await asyncio.to_thread(self.storage.list_staging, tag) or {}
        try:
            is_role = resolve_target(self.profile, tag, target, staged)
        except WaiverError as err:
            raise Refusal(str(err)) from err
        self.store.append(
            tag, person, EventKind.WAIVED, target=target, role=is_role, reason=command.reason
        )
        what = "needs no /ready" if is_role else "no longer blocks"
        why = f": {command.reason}" if command.reason else ""
        await self._notice(tag, f"{person} waived {target} for {tag} ({what}){why}.")
        await self._refresh(tag)
        return Reply(
            f"{target} is waived for {tag}; /unwaive {tag} {target} undoes it.", Tone.SUCCESS
        )

    async def _unwaive(self, person: str, command: cmd.Unwaive, state: ReleaseState) -> Reply:
        tag, target = command.tag, command.target
        self._require_rm(person, tag, "undo waivers of")
        if target not in state.waivers:
            raise Refusal(f"{target} is not waived for {tag}.")
        self.store.append(tag, person, EventKind.UNWAIVED, target=target)
        await self._notice(tag, f"{person} undid the waiver of {target} for {tag}.")
        await self._refresh(tag)
        return Reply(f"{target} is no longer waived for {tag}.", Tone.SUCCESS)

    async def _status(self, tag: ReleaseTag | None) -> Reply:
        tags = [tag] if tag is not None else await self.open_tags()
        if not tags:
            return Reply("No open releases; stage files to start one (see /help).")
        shown = []
        for one in tags:
            async with self._lock(one):
                state = self.store.release(one)
                if state.publishing is not None:  # its files are frozen, not in staging
                    seen = self._seen.get(str(one))
                    trouble = seen.pipeline_trouble if seen is not None else ""
                    text = f"{one}: publishing now (confirmed by {state.publisher})." + (
                        f" {trouble}" if trouble else ""
                    )
                    shown.append(ChannelMessage(ChannelKind.NOTICE, str(one), text))
                    continue
                if state.is_published and not await self._late(one):
                    text = summary_text(self._readiness(one, {}, None, state), state)
                    shown.append(ChannelMessage(ChannelKind.SUMMARY, str(one), text))
                    continue
                try:
                    readiness, _ = await self._observe(one, state, settle=False)
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

    # -- publishing --------------------------------------------------------------------------

    async def _publishable_plan(
        self, tag: ReleaseTag, state: ReleaseState, *, fresh: bool = False
    ) -> PublishPlan:
        """Check everything ``/publish`` needs, withdrawing claims whose files changed, and
        build the plan; raises :class:`Refusal` with the blockers. ``fresh`` hashes every
        file again (at confirmation: a same-size rewrite within one mtime tick must not
        slip through)."""
        readiness, listing = await self._observe(tag, state, settle=True)
        if await self._withdraw_changed_claims(tag, listing, state):
            state = self.store.release(tag)
            readiness = self._readiness(tag, listing, self._seen_listing(tag), state)
        readiness = await self._check_index(readiness, listing, fresh=True)
        blockers = readiness.blockers
        if self.registry is not None and not blockers:
            try:
                await asyncio.to_thread(self.registry.preflight, tag)
            except RegistryError as err:
                blockers.append(f"python.org: {err}")
        if blockers:
            text = f"{tag} cannot be published yet: " + "; ".join(blockers) + "."
            if self._require_signatures and readiness.unsigned:
                text += f" To sign what lacks a signature, run: {self._sign_line(tag)}"
            raise Refusal(text)
        paths = [f.path for role in readiness.roles for f in role.present]
        digests = await self._digest(tag, listing, paths, fresh=fresh)
        index = self._observation(tag).index
        plan = make_plan(self.profile, readiness, listing, digests, index.live if index else None)
        if not plan.files:
            raise Refusal(f"Nothing new is staged for {tag}; stage the files to add first.")
        return plan

    def _sign_line(self, tag: ReleaseTag) -> str:
        origin = self.config.origin  # a file's path, or "built-in default"
        from_file = origin != "built-in default"
        return sign_command(tag, str(self.config.path(Path(origin).name)) if from_file else None)

    async def _run_pipeline(self, state: ReleaseState, *, verified: bool = False) -> None:
        """promote → register → purge → announce, each step journaled and idempotent, so a
        restart resumes where a crash stopped and nothing happens twice. A step that fails is
        retried on every scan (journaled as started once); the channel hears of each new
        reason once. ``verified``: the frozen files were just hashed (at confirmation)."""
        plan, tag = state.publishing, state.tag
        assert plan is not None
        if await self._storage_trouble():
            return  # another bot holds the storage: told once; resumes once it is ours
        for step in index_publishing.pipeline_for(plan, PIPELINE):
            if step in state.steps_done:
                continue
            if state.step_started != step:
                self.store.append(tag, BOT, EventKind.STEP_STARTED, step=step)
            try:
                detail = await self._step(step, plan, state, verified)
            except PromotionConflict as err:
                if not err.moved and not await self._public_or_unknown(state):
                    with contextlib.suppress(StorageError):  # else stays stuck: /abort retries
                        await asyncio.to_thread(self.storage.thaw, plan)
                        await asyncio.to_thread(index_publishing.put_back, self.storage, plan)
                        self.store.append(tag, BOT, EventKind.ABORTED, reason=str(err))
                        await self._notice(
                            tag,
                            f"Publishing {tag} was stopped before anything moved: {err} "
                            "Its files are back in staging.",
                            mentions=_who(state.publisher),
                        )
                        return
                self.metrics.publish_failures += 1
                text = (
                    f"Publishing {tag} stopped part-way: {err} Some files are public already; "
                    "remove the conflicting file and it resumes by itself."
                )
                if self._observation(tag).pipeline_trouble != text:
                    self._observation(tag).pipeline_trouble = text
                    await self._notice(tag, text, mentions=_who(state.publisher))
                return
            except (RelbotError, OSError) as err:
                self.metrics.publish_failures += 1
                log.warning("publish of %s stopped at %s: %s", tag, step, err)
                reason = err if isinstance(err, RelbotError) else f"{err.strerror or err}."
                text = f"Publishing {tag} stopped at {step}: {reason} It resumes by itself."
                if self._observation(tag).pipeline_trouble != text:
                    self._observation(tag).pipeline_trouble = text
                    await self._notice(tag, text, mentions=_who(state.publisher))
                return
            self.store.append(tag, BOT, EventKind.STEP_DONE, step=step, detail=detail)
        self.store.append(
            tag, BOT, EventKind.PUBLISHED, files=len(plan.files), size=plan.total_size
        )
        self.metrics.publishes += 1
        self._seen.pop(str(tag), None)
        if self._index is not None:
            self._index.forget()  # the live index may have changed: judge others afresh
        await self._refresh(tag)

    async def _public_or_unknown(self, state: ReleaseState) -> bool:
        try:
            return bool(await self._made_public(state))
        except Refusal:
            return True

    async def _step(self, step: str, plan: PublishPlan, state: ReleaseState, verified: bool) -> str:
        if step == "promote":
            async with contextlib.AsyncExitStack() as stack:
                # Two tags sharing a public folder (3.14.0rc1, rc2 → 3.14.0/) never promote at
                # once: each conflict check must see the other's files.
                for folder in public_folders(plan):
                    await stack.enter_async_context(
                        self._public_locks.setdefault(folder, asyncio.Lock())
                    )
                # The install index leaves the frozen release first: it replaces the live one
                # after promotion (the index step), never by promotion's no-clobber moves.
                await asyncio.to_thread(index_publishing.set_aside, self.storage, plan)
                report = await asyncio.to_thread(
                    functools.partial(
                        self.storage.promote,
                        plan.promoted,
                        verified=verified,
                        public_before=state.public_before,
                    )
                )
                problems = await asyncio.to_thread(self.storage.verify_public, plan.promoted)
            if problems:
                self.metrics.public_mismatches += 1
                raise StorageError(
                    f"After the move, the public files differ from the confirmed plan "
                    f"({listing(problems)}); registering and announcing wait until someone "
                    "checks them."
                )
            return (
                f"{len(report.renamed)} folders renamed, {report.moved} files moved, "
                f"{report.already} already public"
            )
        if step == index_publishing.INDEX_STEP:
            return await asyncio.to_thread(index_publishing.swap, self.storage, plan)
        if step == "register":
            if self.registry is None:
                return "no release database configured"
            # By difference: the records of files published earlier must stay (late files).
            everything = replace(plan, files=state.public_files + plan.files)
            synced = await asyncio.to_thread(self.registry.sync, everything)
            return (
                f"{synced.created} created, {synced.replaced} replaced, "
                f"{synced.deleted} deleted, {synced.unchanged} unchanged"
            )
        if step == "purge":
            if self.purger is None:
                return "no CDN configured"
            replaced = [f.target for f in plan.replacements]  # the install index
            purged = await asyncio.to_thread(self.purger.purge, plan.tag, replaced)
            if purged.failed:
                failed = "; ".join(str(f) for f in purged.failed[:5])
                await self._notice(
                    plan.tag,
                    f"The CDN purge of {plan.tag} failed for {len(purged.failed)} URLs "
                    f"({failed}); the files are public, stale pages expire on their own.",
                )
            return f"{len(purged.purged)} URLs purged, {len(purged.failed)} failed"
        links, by = self.profile.links(plan.tag), state.publisher or BOT
        text = (
            late.announcement(plan, by, links)
            if state.public_files
            else _announcement(plan, by, links)
        )
        await self.chat.post(ChannelMessage(ChannelKind.ANNOUNCEMENT, str(plan.tag), text))
        return "announced"

    # -- observing staging -------------------------------------------------------------------

    async def _observe(
        self, tag: ReleaseTag, state: ReleaseState, *, settle: bool
    ) -> tuple[Readiness, Listing]:
        """List staging now. With ``settle``, when anything differs from the last observation
        take a second listing a moment later, so a growing file shows as uploading."""
        listing = await self._list(tag)
        await self._list_public(tag, state)
        previous = self._seen_listing(tag)
        if settle and previous != listing:
            await self._sleep(self._settle)
            previous, listing = listing, await self._list(tag)
        self._observation(tag).listing = listing
        self._observation(tag).previous = previous
        readiness = await self._check_signatures(self._readiness(tag, listing, previous, state))
        return await self._check_index(readiness, listing), listing

    async def _list(self, tag: ReleaseTag) -> Listing:
        listing = await asyncio.to_thread(self.storage.list_staging, tag)
        if listing is None:
            raise Refusal(
                f"Nothing is staged for {tag} yet; upload the files to "
                f"{self.storage.staging_location(tag)} first."
            )
        if (folder := listing.get(RELEASE_FOLDER)) is not None:
            where = self.storage.staging_location(tag)
            raise Refusal(f"The staging folder of {tag} ({where}) {folder.problem}.")
        return listing

    def _readiness(
        self, tag: ReleaseTag, listing: Listing, previous: Listing | None, state: ReleaseState
    ) -> Readiness:
        """Readiness from a listing, with the signature verdicts last checked."""
        seen = self._seen.get(str(tag))  # not _observation: a status must not grow the cache
        readiness = compute_readiness(
            self.profile,
            tag,
            listing,
            previous=previous,
            claims=state.claims,
            withdrawals=state.withdrawals,
            holds=tuple(state.holds.values()),
            waivers=tuple(state.waivers.values()),
            public=((seen.public if seen else None) or {}) if state.is_published else (),
        )
        index = seen.index if seen is not None else None
        return replace(
            readiness,
            signatures=seen.signatures if seen is not None else (),
            signatures_required=self._require_signatures,
            install_index=index.verdict if index else None,
        )

    async def _check_index(
        self, readiness: Readiness, listing: Listing, *, fresh: bool = False
    ) -> Readiness:
        """Judge the staged install index against the live one (bot/index_publishing.py)."""
        if self._index is None:
            return readiness
        check = await asyncio.to_thread(
            functools.partial(self._index.check, readiness.tag, listing, fresh=fresh)
        )
        self._observation(readiness.tag).index = check
        return replace(readiness, install_index=check.verdict if check else None)

    async def _check_signatures(self, readiness: Readiness) -> Readiness:
        """Verify ``FILE.sigstore`` of every required file present (cached: a bundle is read
        only when it changed, a file hashed only when it changed)."""
        if self.verifier is None:
            return readiness
        tag = readiness.tag
        listing = self._seen_listing(tag) or {}
        results = []
        for role in readiness.roles:
            for f in role.files:
                if f.required and f.path in listing and self.profile.needs_signature(tag, f.path):
                    results.append(await self._signature(tag, f.path, listing))
        self._observation(tag).signatures = tuple(results)
        return replace(readiness, signatures=tuple(results))

    async def _signature(self, tag: ReleaseTag, path: str, listing: Listing) -> SignatureResult:
        assert self.verifier is not None
        bundle_path = path + BUNDLE_SUFFIX
        entry = listing.get(bundle_path)
        if entry is None or not entry.regular:
            return SignatureResult(path, SignatureStatus.MISSING, f"no {bundle_path}")
        cached = self._bundles.get((str(tag), bundle_path))
        if cached is not None and cached[0] == entry.stamp:
            bundle = cached[1]
        else:
            bundle = await asyncio.to_thread(self.storage.read, tag, bundle_path, MAX_BUNDLE)
            self._bundles[(str(tag), bundle_path)] = (entry.stamp, bundle)
        digest = (await self._digest(tag, listing, [path]))[path]
        return await asyncio.to_thread(self.verifier.verify, tag, path, digest, bundle)

    async def _digest(
        self, tag: ReleaseTag, listing: Listing, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        """SHA-256 of staged files, re-hashing only files whose size or mtime moved, or
        every file when ``fresh``."""
        found: dict[str, str] = {}
        wanted = []
        for path in paths:
            cached = self._digests.get((str(tag), path))
            if not fresh and cached is not None and cached[0] == listing[path].stamp:
                found[path] = cached[1]
            else:
                wanted.append(path)
        if wanted:
            hashed = await asyncio.to_thread(
                functools.partial(self.storage.digest, tag, wanted, fresh=fresh)
            )
            for path, digest in hashed.items():
                self._digests[(str(tag), path)] = (listing[path].stamp, digest)
            found.update(hashed)
        return found

    async def _withdraw_changed_claims(
        self, tag: ReleaseTag, listing: Listing, state: ReleaseState
    ) -> bool:
        withdrew = False
        for role, claim in state.claims.items():
            digests = await self._digest(tag, listing, needs_digest(claim.snapshot, listing))
            changed = changed_since(claim.snapshot, listing, digests)
            if not changed:
                continue
            what = ", ".join(changed)
            verb = "changed" if all(p in listing for p in changed) else "changed or disappeared"
            reason = f"{what} {verb} after /ready"
            self.store.append(tag, BOT, EventKind.WITHDRAWN, role=role, reason=reason)
            await self._notice(
                tag,
                f"The {role} claim on {tag} was withdrawn: {reason}. "
                f"{claim.person}: check the files and say /ready {role} {tag} "
                "again.",
                mentions=[claim.person],
            )
            withdrew = True
        return withdrew

    async def _scan_release(self, tag: ReleaseTag) -> None:
        state = self.store.release(tag)
        if state.publishing is not None:
            return
        listing = await asyncio.to_thread(self.storage.list_staging, tag)
        if state.is_published and not listing:
            return  # published, and no late files staged
        if listing is None:
            listing = {}
        await self._list_public(tag, state)
        previous = self._seen_listing(tag)
        self._observation(tag).listing = listing
        self._observation(tag).previous = previous
        if await self._withdraw_changed_claims(tag, listing, state):
            state = self.store.release(tag)
        readiness = await self._check_signatures(self._readiness(tag, listing, previous, state))
        readiness = await self._check_index(readiness, listing)
        await self._refresh_summary(readiness, state)

    async def _late(self, tag: ReleaseTag) -> bool:
        """Whether files are staged for ``tag``: for a published release, late files."""
        return bool(await asyncio.to_thread(self.storage.list_staging, tag))

    async def _list_public(self, tag: ReleaseTag, state: ReleaseState) -> None:
        """For a published release, list what is public (one listing per folder), so late
        files' readiness counts it."""
        if state.is_published:
            found = await asyncio.to_thread(
                self.storage.list_public, late.public_folders(self.profile, tag)
            )
            self._observation(tag).public = late.as_staged(self.profile, tag, found)

    async def open_tags(self) -> list[ReleaseTag]:
        """Releases with a staging folder, or with history and not yet published."""
        names = await asyncio.to_thread(self.storage.staged_tags)
        tags = set()
        for name in names:
            try:
                tags.add(ReleaseTag.parse(name))
            except RelbotError:
                continue  # a folder that is not a release: not ours to judge
        tags.update(self.store.open_tags())
        return sorted(tags)

    def listed_tags(self) -> list[ReleaseTag]:
        """Releases whose staging the bot has listed since it started (no I/O)."""
        seen = self._seen.items()
        return sorted(ReleaseTag.parse(name) for name, o in seen if o.listing is not None)

    async def observed(self, tag: ReleaseTag) -> Observed:
        """``tag`` as last seen, and what ``/publish TAG`` would refuse for now, listing and
        hashing nothing (the board calls it on every request). python.org, ``/publish``'s last
        check, is asked only when nothing else blocks, and at most once per poll interval."""
        state = self.store.release(tag)
        seen = self._seen.get(str(tag))
        blockers = []
        if not self.team.rms_of(tag.branch):
            blockers.append(f"no release manager is configured for {tag.branch}")
        if state.is_published:
            return Observed(state, None, {}, (*blockers, f"{tag} is already published"))
        if state.publishing is not None:
            return Observed(state, None, {}, (*blockers, f"{tag} is being published right now"))
        if seen is None or seen.listing is None:
            return Observed(state, None, {}, (*blockers, "staging has not been listed yet"))
        listing = seen.listing
        readiness = self._readiness(tag, listing, seen.previous, state)
        digests = {
            path: digest
            for (name, path), (stamp, digest) in self._digests.items()
            if name == str(tag) and path in listing and listing[path].stamp == stamp
        }
        blockers += readiness.blockers
        for role, claim in state.claims.items():  # /publish withdraws these claims first
            if changed := changed_since(claim.snapshot, listing, digests):
                blockers.append(f"{role}: {', '.join(changed)} changed after /ready")
        if not blockers and self.registry is not None:  # as /publish: only when all else is fine
            objection = await self._preflight_lately(tag, seen)
            blockers += [f"python.org: {objection}"] if objection else []
        return Observed(state, readiness, digests, tuple(blockers))

    async def _preflight_lately(self, tag: ReleaseTag, seen: _Observation) -> str:
        """python.org's objection to publishing ``tag`` ("" for none), asked again only when
        the last answer is a poll interval old and no command holds the release."""
        assert self.registry is not None
        last = seen.preflight
        fresh = last is not None and self._clock() - last[0] < self.config.model.poll_interval
        if last is not None and (fresh or self._locks.locked(str(tag))):
            return last[1]
        async with self._lock(tag):
            try:
                await asyncio.to_thread(self.registry.preflight, tag)
                objection = ""
            except RegistryError as err:
                objection = str(err)
        seen.preflight = (self._clock(), objection)
        return objection

    # -- channel -----------------------------------------------------------------------------

    async def _refresh(self, tag: ReleaseTag) -> None:
        """Re-render the summary from the last listing seen (no new listing)."""
        state = self.store.release(tag)
        listing = self._seen_listing(tag) or {}
        await self._refresh_summary(self._readiness(tag, listing, None, state), state)
        if state.is_published:  # its last summary is shown: nothing left to observe
            self._forget_files(tag)
            self._seen.pop(str(tag), None)

    async def _refresh_summary(self, readiness: Readiness, state: ReleaseState) -> None:
        seen = self._observation(readiness.tag)
        await self._tell_rms_when_publishable(readiness, state, seen)
        text = summary_text(readiness, state)
        if text == seen.summary_text:
            return
        # A published release has nothing left to break down: the headline says it all.
        shown = None if state.is_published else readiness
        message = ChannelMessage(ChannelKind.SUMMARY, str(readiness.tag), text, shown)
        ref = seen.summary_ref or self.store.summary_ref(readiness.tag)
        if ref is None:
            seen.summary_ref = await self.chat.post(message)
            self.store.set_summary_ref(readiness.tag, seen.summary_ref)
        else:
            await self.chat.update(ref, message)
            seen.summary_ref = ref
        seen.summary_text = text

    async def _tell_rms_when_publishable(
        self, readiness: Readiness, state: ReleaseState, seen: _Observation
    ) -> None:
        """Call the RMs when the release becomes publishable while the bot watches (not at
        a restart that finds it so: they were called when it happened)."""
        now = readiness.publishable and not state.is_published and state.publishing is None
        if now and seen.publishable is False:
            tag = readiness.tag
            await self._notice(
                tag,
                f"{tag} is publishable: every role is ready. RM: /publish {tag}",
                mentions=self.team.rms_of(tag.branch),
            )
        seen.publishable = now

    async def _notice(
        self, tag: ReleaseTag | None, text: str, mentions: Sequence[str] = ()
    ) -> None:
        """A new channel message; ``mentions`` are the people who must act on it."""
        where = str(tag) if tag else None
        await self.chat.post(ChannelMessage(ChannelKind.NOTICE, where, text, None, tuple(mentions)))

    async def _staging_down(self, err: StorageError) -> None:
        health = self._health
        health.failures += 1
        health.skip_scans = min(2 ** (health.failures - 1) - 1, 20)  # back off: skip scans
        log.warning(
            "scan %d of staging failed (%s); next scan in %d s",
            health.failures,
            err,
            (health.skip_scans + 1) * self.config.model.poll_interval,
        )
        if health.unreachable_since is None:
            health.unreachable_since = self._clock()
            await self._notice(None, f"Cannot scan staging: {err} I keep trying.")

    async def _staging_up(self) -> None:
        health = self._health
        if health.unreachable_since is not None:
            await self._notice(None, "Staging is reachable again.")
        health.unreachable_since, health.failures, health.skip_scans = None, 0, 0

    async def _storage_trouble(self) -> str:
        """Renew the storage lock (a heartbeat, and proof this bot still holds it); the
        reason when another bot holds it now, told to the channel once."""
        if self.lease is None:
            return ""
        try:
            await asyncio.to_thread(self.lease.renew)
        except StorageError as err:  # unreachable: the scan's own notice says so
            return str(err)
        except StorageLocked as err:
            if self._lease_trouble != str(err):
                self._lease_trouble = str(err)
                log.warning("%s", err)
                await self._notice(None, f"{err} This bot publishes nothing meanwhile.")
            return str(err)
        self._lease_trouble = ""
        return ""

    # -- small things ------------------------------------------------------------------------

    def _require_rm(self, person: str, tag: ReleaseTag, what: str) -> None:
        if not self.team.is_rm(person, tag.branch):
            rms = ", ".join(self.team.rms_of(tag.branch))
            raise NotAllowed(f"Only a release manager of {tag.branch} ({rms}) can {what} {tag}.")

    def _refuse(
        self, tag: ReleaseTag | None, actor: str, text: str, reason: str, *, why: str = "rule"
    ) -> Reply:
        if tag is not None:
            self.store.append(tag, actor, EventKind.REFUSED, command=_redact(text), reason=reason)
        return Reply(reason, Tone.REFUSAL, refusal=why)

    def _lock(self, tag: ReleaseTag) -> AbstractAsyncContextManager[None]:
        return self._locks.hold(str(tag))

    def _forget_files(self, tag: ReleaseTag) -> None:
        """Drop the hashes and bundles cached for ``tag``'s staged files."""
        for cache in (self._digests, self._bundles):
            for key in [key for key in cache if key[0] == str(tag)]:
                del cache[key]

    def retained_tags(self) -> set[str]:
        """The releases this gate keeps anything for in memory (locks, observations,
        hashes, bundles): open releases only, whatever was typed."""
        keys = self._locks.keys() | set(self._seen)
        return keys | {tag for tag, _ in self._digests} | {tag for tag, _ in self._bundles}

    def _observation(self, tag: ReleaseTag) -> _Observation:
        return self._seen.setdefault(str(tag), _Observation())

    def _seen_listing(self, tag: ReleaseTag) -> Listing | None:
        return self._observation(tag).listing

    def recorded_open_tags(self) -> list[ReleaseTag]:
        """Releases with history and not yet published, from the journal alone (no storage
        I/O): what a platform offers when the staging cannot be listed."""
        return self.store.open_tags()


def _refusal_reason(err: Refusal) -> str:
    """The metrics label of a refusal (one of ``bot.metrics.REFUSAL_REASONS``)."""
    if isinstance(err, NotAllowed):
        return "not_allowed"
    return "code" if isinstance(err, CodeRefused) else "rule"


def _who(person: str | None) -> list[str]:
    return [person] if person and person != BOT else []


def _redact(text: str) -> str:
    """The command as typed, minus any confirmation code, for the audit trail."""
    words = text.split()
    if len(words) == 4 and words[2].lower() == "confirm":
        words[3] = "<code>"
    return " ".join(words)[:200]


def _plan_difference(old: PublishPlan, new: PublishPlan) -> str:
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
    return ", ".join(sorted(changes)) or "files changed"


def _announcement(plan: PublishPlan, publisher: str, links: dict[str, str]) -> str:
    parts = ", ".join(f"{role} {len(files)}" for role, files in plan.by_role().items())
    where = "".join(f" {label.capitalize()}: {url}" for label, url in links.items())
    return (
        f"{plan.tag} is published: {len(plan.files)} files ({parts}; "
        f"{size_text(plan.total_size)}), confirmed by {publisher}.{where}"
    )
