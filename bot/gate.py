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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from bot import index_publishing
from bot.config import Config
from bot.domain import commands as cmd
from bot.domain.files import Listing, SnapshotFile, changed_since, needs_digest
from bot.domain.history import EventKind, ReleaseState, plan_to_json
from bot.domain.plan import PublishPlan, make_plan
from bot.domain.readiness import Readiness, compute_readiness
from bot.domain.signing import BUNDLE_SUFFIX, SignatureResult, SignatureStatus
from bot.domain.tags import ReleaseTag
from bot.errors import (
    PromotionConflict,
    RegistryError,
    RelbotError,
    StorageError,
)
from bot.index_publishing import IndexCheck, IndexInspector
from bot.messages import ChannelKind, ChannelMessage, ConfirmPrompt, Reply, Tone
from bot.metrics import Metrics
from bot.pinning import ALLOWED_WHILE_PUBLISHING, busy_refusal, listing, public_folders
from bot.ports import Chat, Purger, Registry, SignatureVerifier, Storage
from bot.render import count, help_text, plan_text, size_text, summary_text, when
from bot.state import StateStore
from bot.team import Team

log = logging.getLogger(__name__)

BOT = "relbot"  # the actor of events the bot causes itself (a scan withdrawing a claim)
CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
CODE_LENGTH = 8
MAX_BUNDLE = 1 << 20  # a Sigstore bundle is a few kB; anything this big is not one
PIPELINE = ("promote", "register", "purge", "announce")


class Refusal(RelbotError):
    """A command that cannot be carried out; the message is the one-sentence reply."""


@dataclass
class _Observation:
    """What the bot last saw of a release's staging folder, and what it told the channel."""

    listing: Listing | None = None
    signatures: tuple[SignatureResult, ...] = ()
    index: IndexCheck | None = None  # the staged install index, last checked
    pipeline_trouble: str = ""  # the last reason a publish stopped, told to the channel
    summary_ref: str | None = None
    summary_text: str = ""


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
        store: StateStore,
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
        self._locks: dict[str, asyncio.Lock] = {}
        self._public_locks: dict[str, asyncio.Lock] = {}  # per public folder: one promotion
        self._seen: dict[str, _Observation] = {}
        self._digests: dict[tuple[str, str], tuple[tuple[int, float], str]] = {}
        self._health = _Health()
        self.metrics = Metrics()
        self._index = IndexInspector.for_profile(storage, self.profile)

    # -- entry points ------------------------------------------------------------------------

    async def handle(self, platform: str, user: str, text: str) -> Reply:
        """Answer one chat line from ``user`` on ``platform``. Always exactly one reply."""
        reply = await self._answer(platform, user, text)
        if reply.private:
            self.metrics.refusals += 1
        return reply

    async def _answer(self, platform: str, user: str, text: str) -> Reply:
        try:
            command = cmd.parse_command(text, self.profile.roles)
        except cmd.CommandError as err:
            return Reply(str(err), Tone.REFUSAL)
        verb = type(command).__name__.lower()
        self.metrics.commands[verb] = self.metrics.commands.get(verb, 0) + 1
        if isinstance(command, cmd.Help):
            return Reply(help_text(self.profile.roles))
        if isinstance(command, cmd.Status):
            try:
                return await self._status(command.tag)
            except StorageError as err:
                return Reply(f"{err} Try /status again shortly.", Tone.REFUSAL)
        person = self.team.identify(platform, user)
        tag = command.tag
        if person is None:
            return self._refuse(
                tag,
                f"{platform}:{user}",
                text,
                f"You are not on the release team ({platform} user {user}); ask an admin to "
                "add your ID to relbot's config.",
            )
        async with self._lock(tag):
            try:
                return await self._dispatch(person, command)
            except Refusal as err:
                return self._refuse(tag, person, text, str(err))
            except StorageError as err:
                return Reply(f"{err} Nothing was changed; try again shortly.", Tone.REFUSAL)

    async def scan(self) -> None:
        """One scheduled pass over every open release: one listing per folder, digests only
        for changed files, a channel update only when something changed."""
        if self._health.skip_scans > 0:
            self._health.skip_scans -= 1
            return
        started = time.perf_counter()
        try:
            tags = await self.open_tags()
            for tag in tags:
                async with self._lock(tag):
                    await self._scan_release(tag)
        except StorageError as err:
            self.metrics.scan_failures += 1
            await self._staging_down(err)
            return
        self.metrics.scans += 1
        self.metrics.last_scan_seconds = time.perf_counter() - started
        self.metrics.last_successful_scan = self._clock()
        await self._staging_up()
        await self.resume()

    async def resume(self) -> None:
        """Finish publishes that a crash or an outage interrupted (the journal says where)."""
        for tag in self.store.open_tags():
            state = self.store.release(tag)
            if state.publishing is not None and not state.is_published and not state.holds:
                async with self._lock(tag):
                    state = self.store.release(tag)
                    # A hold pauses a stuck publish: nothing more becomes public until /unhold.
                    if state.publishing is not None and not state.is_published and not state.holds:
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
        if state.is_published and state.published_at is not None:
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
            case cmd.Abort():
                return await self._abort(person, tag, state)
        raise AssertionError(f"unhandled command {command!r}")

    async def _ready(self, person: str, command: cmd.Ready, state: ReleaseState) -> Reply:
        role, tag = command.role, command.tag
        if not self.team.has_role(person, role):
            held = ", ".join(self.team.roles_of(person)) or "no role"
            raise Refusal(
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
            raise Refusal(f"Only a {role} person or an RM of {tag.branch} can withdraw {role}.")
        if role not in state.claims:
            raise Refusal(f"{role} has no claim on {tag} to withdraw.")
        reason = f"withdrawn by {person} with /unready"
        self.store.append(tag, person, EventKind.WITHDRAWN, role=role, reason=reason)
        await self._notice(tag, f"{person} withdrew {role} from {tag}.")
        await self._refresh(tag)
        return Reply(f"{role} is no longer ready for {tag}.", Tone.SUCCESS)

    async def _hold(self, person: str, command: cmd.Hold, state: ReleaseState) -> Reply:
        tag = command.tag
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
            raise Refusal(
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
                raise Refusal(f"That confirmation code was {why}; {again}.")
            raise Refusal(f"That confirmation code is not valid for {tag}; {again}.")
        if offer.person != person:
            raise Refusal(
                f"That confirmation code was issued to {offer.person}; only they can "
                f"use it ({again} of your own)."
            )
        if self._clock() > offer.expires_at:
            raise Refusal(f"That confirmation code expired at {when(offer.expires_at)}; {again}.")
        plan = await self._publishable_plan(tag, state)
        if plan.digest != offer.plan.digest:
            changed = _plan_difference(offer.plan, plan)
            raise Refusal(
                f"Staging changed since the plan ({changed}); nothing was published, {again}."
            )
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
        if not done.is_published:
            return Reply(
                f"Publishing {tag} did not finish; the channel has the reason and it "
                "resumes by itself once the cause is fixed.",
                Tone.REFUSAL,
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
        return Reply(
            f"Re-spin of {tag}: claims and pending confirmation withdrawn; staging was "
            "left as it is.",
            Tone.SUCCESS,
        )

    async def _status(self, tag: ReleaseTag | None) -> Reply:
        tags = [tag] if tag is not None else await self.open_tags()
        if not tags:
            return Reply("No open releases; stage files to start one (see /help).")
        texts = []
        for one in tags:
            async with self._lock(one):
                state = self.store.release(one)
                if state.is_published:
                    texts.append(summary_text(self._readiness(one, {}, None, state), state))
                    continue
                if state.publishing is not None:  # its files are frozen, not in staging
                    trouble = self._observation(one).pipeline_trouble
                    texts.append(
                        f"{one}: publishing now (confirmed by {state.publisher})."
                        + (f" {trouble}" if trouble else "")
                    )
                    continue
                try:
                    readiness, _ = await self._observe(one, state, settle=False)
                except Refusal as err:  # nothing staged: for a status, an answer, not an error
                    texts.append(f"{one}: {err}")
                    continue
                texts.append(summary_text(readiness, state))
        return Reply("\n".join(texts))

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
            raise Refusal(f"{tag} cannot be published yet: " + "; ".join(blockers) + ".")
        paths = [f.path for role in readiness.roles for f in role.present]
        digests = await self._digest(tag, listing, paths, fresh=fresh)
        index = self._observation(tag).index
        return make_plan(self.profile, readiness, listing, digests, index.live if index else None)

    async def _run_pipeline(self, state: ReleaseState, *, verified: bool = False) -> None:
        """promote → register → purge → announce, each step journaled and idempotent, so a
        restart resumes where a crash stopped and nothing happens twice. A step that fails is
        retried on every scan (journaled as started once); the channel hears of each new
        reason once. ``verified``: the frozen files were just hashed (at confirmation)."""
        plan, tag = state.publishing, state.tag
        assert plan is not None
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
                        )
                        return
                self.metrics.publish_failures += 1
                text = (
                    f"Publishing {tag} stopped part-way: {err} Some files are public already; "
                    "remove the conflicting file and it resumes by itself."
                )
                if self._observation(tag).pipeline_trouble != text:
                    self._observation(tag).pipeline_trouble = text
                    await self._notice(tag, text)
                return
            except (RelbotError, OSError) as err:
                self.metrics.publish_failures += 1
                log.warning("publish of %s stopped at %s: %s", tag, step, err)
                reason = err if isinstance(err, RelbotError) else f"{err.strerror or err}."
                text = f"Publishing {tag} stopped at {step}: {reason} It resumes by itself."
                if self._observation(tag).pipeline_trouble != text:
                    self._observation(tag).pipeline_trouble = text
                    await self._notice(tag, text)
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
            synced = await asyncio.to_thread(self.registry.sync, plan)
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
        text = _announcement(plan, state.publisher or BOT, self.profile.links(plan.tag))
        await self.chat.post(ChannelMessage(ChannelKind.ANNOUNCEMENT, str(plan.tag), text))
        return "announced"

    # -- observing staging -------------------------------------------------------------------

    async def _observe(
        self, tag: ReleaseTag, state: ReleaseState, *, settle: bool
    ) -> tuple[Readiness, Listing]:
        """List staging now. With ``settle``, when anything differs from the last observation
        take a second listing a moment later, so a growing file shows as uploading."""
        listing = await self._list(tag)
        previous = self._seen_listing(tag)
        if settle and previous != listing:
            await self._sleep(self._settle)
            previous, listing = listing, await self._list(tag)
        self._observation(tag).listing = listing
        readiness = await self._check_signatures(self._readiness(tag, listing, previous, state))
        return await self._check_index(readiness, listing), listing

    async def _list(self, tag: ReleaseTag) -> Listing:
        listing = await asyncio.to_thread(self.storage.list_staging, tag)
        if listing is None:
            raise Refusal(
                f"Nothing is staged for {tag} yet; upload the files to "
                f"{self.storage.staging_location(tag)} first."
            )
        return listing

    def _readiness(
        self, tag: ReleaseTag, listing: Listing, previous: Listing | None, state: ReleaseState
    ) -> Readiness:
        """Readiness from a listing, with the signature verdicts last checked."""
        readiness = compute_readiness(
            self.profile,
            tag,
            listing,
            previous=previous,
            claims=state.claims,
            withdrawals=state.withdrawals,
            holds=tuple(state.holds.values()),
        )
        index = self._observation(tag).index
        return replace(
            readiness,
            signatures=self._observation(tag).signatures,
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
                if f.required and f.path in listing:
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
            )
            withdrew = True
        return withdrew

    async def _scan_release(self, tag: ReleaseTag) -> None:
        state = self.store.release(tag)
        if state.is_published or state.publishing is not None:
            return
        listing = await asyncio.to_thread(self.storage.list_staging, tag)
        if listing is None:
            listing = {}
        previous = self._seen_listing(tag)
        self._observation(tag).listing = listing
        if await self._withdraw_changed_claims(tag, listing, state):
            state = self.store.release(tag)
        readiness = await self._check_signatures(self._readiness(tag, listing, previous, state))
        readiness = await self._check_index(readiness, listing)
        await self._refresh_summary(readiness, state)

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

    # -- channel -----------------------------------------------------------------------------

    async def _refresh(self, tag: ReleaseTag) -> None:
        """Re-render the summary from the last listing seen (no new listing)."""
        state = self.store.release(tag)
        listing = self._seen_listing(tag) or {}
        await self._refresh_summary(self._readiness(tag, listing, None, state), state)

    async def _refresh_summary(self, readiness: Readiness, state: ReleaseState) -> None:
        seen = self._observation(readiness.tag)
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

    async def _notice(self, tag: ReleaseTag | None, text: str) -> None:
        await self.chat.post(ChannelMessage(ChannelKind.NOTICE, str(tag) if tag else None, text))

    async def _staging_down(self, err: StorageError) -> None:
        health = self._health
        health.failures += 1
        health.skip_scans = min(2 ** (health.failures - 1) - 1, 20)  # back off: skip scans
        if health.unreachable_since is None:
            health.unreachable_since = self._clock()
            await self._notice(None, f"Cannot scan staging: {err} I keep trying.")

    async def _staging_up(self) -> None:
        health = self._health
        if health.unreachable_since is not None:
            await self._notice(None, "Staging is reachable again.")
        health.unreachable_since, health.failures, health.skip_scans = None, 0, 0

    # -- small things ------------------------------------------------------------------------

    def _require_rm(self, person: str, tag: ReleaseTag, what: str) -> None:
        if not self.team.is_rm(person, tag.branch):
            rms = ", ".join(self.team.rms_of(tag.branch))
            raise Refusal(f"Only a release manager of {tag.branch} ({rms}) can {what} {tag}.")

    def _refuse(self, tag: ReleaseTag | None, actor: str, text: str, reason: str) -> Reply:
        if tag is not None:
            self.store.append(tag, actor, EventKind.REFUSED, command=_redact(text), reason=reason)
        return Reply(reason, Tone.REFUSAL)

    def _lock(self, tag: ReleaseTag) -> asyncio.Lock:
        return self._locks.setdefault(str(tag), asyncio.Lock())

    def _observation(self, tag: ReleaseTag) -> _Observation:
        return self._seen.setdefault(str(tag), _Observation())

    def _seen_listing(self, tag: ReleaseTag) -> Listing | None:
        return self._observation(tag).listing


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
    return ", ".join(sorted(changes)) or "files changed"


def _announcement(plan: PublishPlan, publisher: str, links: dict[str, str]) -> str:
    parts = ", ".join(f"{role} {len(files)}" for role, files in plan.by_role().items())
    where = "".join(f" {label.capitalize()}: {url}" for label, url in links.items())
    return (
        f"{plan.tag} is published: {len(plan.files)} files ({parts}; "
        f"{size_text(plan.total_size)}), confirmed by {publisher}.{where}"
    )
