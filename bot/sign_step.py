"""The publish pipeline's first step when the RM confirmed with a login: sign the frozen files.

At the confirmation the freeze moved the plan's files into the bot's own area and hashed them
there; a freeze without problems means those hashes are the plan's. This step signs exactly
those digests (the files are not read again) with the identity the confirmation handed over,
verifies every bundle against the branch's signer as the gate does, writes ``F.sig``,
``F.crt`` and ``F.sigstore`` beside each frozen file, and journals the plan with them, so
they are promoted, registered and announced with the rest.

A failure (the log or the CA unreachable, an expired token, a bundle that does not verify, a
login lost in a restart) calls the publish off before anything is public: the files go back
to staging, the channel is told why once, and the RM asks for a new plan and login.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bot import index_publishing
from bot.connections import Connections
from bot.domain.history import EventKind, ReleaseState, plan_to_json
from bot.domain.profile import Profile
from bot.domain.signing import BUNDLE_SUFFIX, SignatureStatus
from bot.domain.signing_plan import sidecar_files, with_signatures
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError, StorageError
from bot.login import Handover, Logins
from bot.pinning import listing
from bot.ports import Journal
from bot.reporter import Reporter

if TYPE_CHECKING:
    from bot.pipeline import Run

log = logging.getLogger(__name__)

NAME = "sign"
SIGNING_FAILED = "signing failed"  # how the journal says why such a publish was called off


class SigningFailed(RelbotError):
    """The confirmed files could not be signed; nothing is public. The message says why."""


class Sign:
    """Sign the frozen files that the confirmed plan lists as unsigned."""

    name = NAME

    def __init__(
        self, conn: Connections, store: Journal, profile: Profile, logins: Logins, *, actor: str
    ) -> None:
        self._conn = conn
        self._store = store
        self._profile = profile
        self._logins = logins
        self._actor = actor  # who the journal says signed: the bot, with the RM's identity

    async def run(self, run: Run) -> str:
        plan, state = run.plan, run.state
        to_sign = state.to_sign
        if not to_sign:
            return "nothing to sign"
        planned = {f.path for f in plan.files}
        if all(path + BUNDLE_SUFFIX in planned for path in to_sign):
            return "signed before a restart"  # the journal has them; only STEP_DONE was lost
        handover = self._logins.take(plan.tag)
        if handover is None:
            raise SigningFailed(
                "the login given with the confirmation is gone (the bot restarted, or an "
                "earlier attempt used it)"
            )
        if not run.verified:
            raise SigningFailed(
                "the confirmed files could not be frozen and hashed at the confirmation, so "
                "there are no checked digests to sign"
            )
        files = {f.path: f for f in plan.files if f.path in set(to_sign)}
        digests = {path: f.sha256 for path, f in files.items()}
        contents = await asyncio.to_thread(self._sign, plan.tag, handover, digests)
        identity, issuer = handover.identity
        storage = self._conn.storage
        try:
            for path in to_sign:
                for suffix, data in contents[path].items():
                    await asyncio.to_thread(storage.write_frozen, plan, path + suffix, data)
        except StorageError as err:
            raise SigningFailed(
                f"writing the signatures beside the frozen files failed: {err}"
            ) from err
        sidecars = [s for path in to_sign for s in sidecar_files(files[path], contents[path])]
        signed = with_signatures(plan, sidecars, self._profile.is_index)
        self._store.append(
            plan.tag,
            self._actor,
            EventKind.SIGNED,
            identity=identity,
            signed=len(to_sign),
            plan=plan_to_json(signed),
        )
        return f"{len(to_sign)} files signed as {identity} via {issuer}"

    def _sign(
        self, tag: ReleaseTag, handover: Handover, digests: Mapping[str, str]
    ) -> dict[str, dict[str, bytes]]:
        """Sign, then verify every bundle as the gate will (blocking): the signature files
        of each path. Raises :class:`SigningFailed`."""
        from bot.signing import SigningError, sidecar_contents, sign_digests

        try:
            bundles, failed = sign_digests(handover.trust, handover.token, digests)
        except SigningError as err:
            raise SigningFailed(str(err)) from err
        if failed:
            why = next(iter(failed.values()))
            raise SigningFailed(f"{len(failed)} of {len(digests)} files were not signed ({why})")
        verifier = self._conn.verifier
        assert verifier is not None  # signing at the confirmation needs one
        contents = {path: sidecar_contents(bundle) for path, bundle in bundles.items()}
        for path, written in contents.items():
            verdict = verifier.verify(tag, path, digests[path], written[BUNDLE_SUFFIX])
            if verdict.status is not SignatureStatus.VALID:
                raise SigningFailed(f"the signature of {path} does not verify: {verdict.reason}")
        return contents


async def call_off(
    conn: Connections,
    store: Journal,
    reporter: Reporter,
    state: ReleaseState,
    err: SigningFailed,
    *,
    actor: str,
) -> None:
    """Undo a confirmed publish whose signing failed (nothing is public yet): its files go
    back to staging and the channel hears why, once. When putting them back fails, the
    publish stays stopped and ``/abort`` retries."""
    plan, tag, publisher = state.publishing, state.tag, state.publisher
    assert plan is not None
    mentions = [publisher] if publisher and publisher != actor else []
    log.warning("signing %s failed: %s", tag, err)
    try:
        clashes = await asyncio.to_thread(conn.storage.thaw, plan)
        await asyncio.to_thread(index_publishing.put_back, conn.storage, plan)
    except StorageError as undo:
        await reporter.publish_stopped(
            tag,
            f"Publishing {tag} stopped before anything became public: signing failed ({err}), "
            f"and putting its files back in staging failed too ({undo}); /abort {tag} retries.",
            mentions,
        )
        return
    store.append(tag, actor, EventKind.ABORTED, reason=f"{SIGNING_FAILED}: {err}")
    kept = f" ({listing(clashes)} stayed in the bot's area: a newer upload has its name)"
    await reporter.notice(
        tag,
        f"Publishing {tag} was called off before anything became public: signing failed "
        f"({err}). Its files are back in staging{kept if clashes else ''}; type /publish {tag} "
        "for a new plan and login link, then confirm again.",
        mentions=mentions,
    )
