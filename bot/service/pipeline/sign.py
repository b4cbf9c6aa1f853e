"""The publish pipeline's step after the freeze when the RM confirmed with a login: sign the
bot's copies.

The freeze made the bot's own copy of every confirmed file and hashed it as it was written;
a freeze that finished means those hashes are the plan's. This step signs exactly those
digests (the files are not read again) with the identity the confirmation handed over,
verifies every bundle against the branch's signer as the gate does, adds ``F.sig``,
``F.crt`` and ``F.sigstore`` to the bot's copies, and journals the plan with them, so they
are promoted, registered and announced with the rest.

A failure (the log or the CA unreachable, an expired token, a bundle that does not verify, a
login lost in a restart) calls the publish off before anything is public: the bot's copies
are dropped (staging was never touched), the channel is told why once, and the RM asks for a
new plan and login.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bot.domain.history import EventKind, plan_to_json
from bot.domain.profile import Profile
from bot.domain.signing import BUNDLE_SUFFIX, SIDECARS, SignatureStatus
from bot.domain.signing_plan import sidecar_files, with_signatures
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError, StorageError
from bot.ports import Journal
from bot.service.connections import Connections
from bot.signing.login import Handover, Logins

if TYPE_CHECKING:
    from bot.service.pipeline.steps import Run

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
        to_sign = state.to_sign  # never empty: the runner runs this step only when it is not
        planned = {f.path for f in plan.files}
        if all(path + BUNDLE_SUFFIX in planned for path in to_sign):
            return "signed before a restart"  # the journal has them; only STEP_DONE was lost
        handover = self._logins.take(plan.tag)
        if handover is None:
            raise SigningFailed(
                "the login given with the confirmation is gone (the bot restarted, or an "
                "earlier attempt used it)"
            )
        assert "freeze" in state.steps_done  # the runner runs this step after the freeze
        files = {f.path: f for f in plan.files if f.path in set(to_sign)}
        digests = {path: f.sha256 for path, f in files.items()}
        contents = await asyncio.to_thread(self._sign, plan.tag, handover, digests)
        identity, issuer = handover.identity
        made = [
            (sidecar, contents[path][suffix])
            for path in to_sign
            for suffix, sidecar in zip(
                SIDECARS, sidecar_files(files[path], contents[path]), strict=True
            )
        ]
        try:
            await asyncio.to_thread(self._conn.storage.write_frozen, plan, made)
        except StorageError as err:
            raise SigningFailed(f"adding the signatures to the bot's copies failed: {err}") from err
        signed = with_signatures(plan, [f for f, _ in made], self._profile.is_index)
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
        from bot.signing.signer import SigningError, sidecar_contents, sign_digests

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


def called_off(tag: ReleaseTag, err: SigningFailed) -> str:
    """What the channel and the RM are told when signing calls a publish off."""
    return (
        f"Publishing {tag} was called off before anything became public: signing failed "
        f"({err}). Staging is as the uploaders left it; type /publish {tag} for a new plan "
        "and login link, then confirm again."
    )
