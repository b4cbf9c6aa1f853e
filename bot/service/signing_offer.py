"""Signing at the confirmation, from chat: what ``/publish TAG`` asks of the RM when files that
must be signed lack a valid signature (how many, as whom, and a login link), and what the
confirmation checks before anything moves (the login's code traded for an identity token,
which must be the branch's signer).

The signing itself is a step of the publish pipeline (:mod:`bot.service.pipeline.sign`); this module
only prepares it. Pending logins live in memory (:class:`bot.signing.login.Logins`), never in the
journal: a restart forgets them and the RM asks for a new plan.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from bot.config import Config
from bot.domain.login import PUBLIC_ISSUER, STAGING_ISSUER
from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.signing import BUNDLE_SUFFIX, SignatureStatus, sign_command
from bot.domain.signing_plan import signing_problems
from bot.domain.tags import ReleaseTag
from bot.domain.text import listing
from bot.errors import ConfigError, StorageError
from bot.service.connections import Connections
from bot.service.refusals import Refusal
from bot.signing.login import Handover, LoginError, Logins, OobLogin, PendingLogin

MAX_BUNDLE = 1 << 20  # a Sigstore bundle is a few kB


@dataclass(frozen=True)
class SigningOffer:
    """What a plan signs at its confirmation: the files, as whom, and the login."""

    to_sign: tuple[str, ...]
    signer: tuple[str, str]  # (identity, issuer)
    login: PendingLogin

    def text(self) -> str:
        """The plan's lines about signing (the login link included)."""
        identity, issuer = self.signer
        files = "1 file" if len(self.to_sign) == 1 else f"{len(self.to_sign)} files"
        return (
            f"Signing: {files} python.org lists {'has' if len(self.to_sign) == 1 else 'have'} "
            f"no signature yet ({listing(list(self.to_sign), 3)}). At the confirmation the "
            f"bot signs them as {identity} via {issuer}, before anything becomes public.\n"
            f"Log in as {identity}: {self.login.link}\n"
            f"The login page shows a code: add it to the confirm line, as <login>."
        )


class ConfirmSigning:
    """The signing half of ``/publish`` and its confirmation, for one configured bot."""

    def __init__(
        self,
        config: Config,
        conn: Connections,
        profile: Profile,
        logins: Logins,
    ) -> None:
        self._config = config
        self._conn = conn
        self._profile = profile
        self._signers = config.signer
        self.logins = logins
        self.issuer = issuer_of(config)

    def required(self, tag: ReleaseTag) -> bool:
        """Whether ``tag``'s signed files need signatures, and the bot can check them."""
        return self._conn.verifier is not None and self._config.requires_signatures(tag)

    async def offer(self, plan: PublishPlan) -> SigningOffer | None:
        """What ``plan`` signs at its confirmation (None: nothing to sign, or signatures are
        not required), with a new login. Raises :class:`Refusal` when the bot cannot sign it:
        no signer for the branch, a signature file staged alone, the issuer unreachable."""
        tag = plan.tag
        if not self.required(tag):
            return None
        to_sign = await self._unsigned(plan)
        if not to_sign:
            return None
        signer = self._signers(tag)
        if signer is None:
            raise Refusal(
                f"{listing(to_sign)} must be signed, but no signer is configured for branch "
                f"{tag.branch}; add it to [signatures] identities. Nothing changed."
            )
        if problems := signing_problems(plan, to_sign):
            raise Refusal(f"{tag} cannot be signed at /publish: {'; '.join(problems)}.")
        try:
            login = await asyncio.to_thread(OobLogin(self.issuer).begin)
        except LoginError as err:
            raise Refusal(
                f"{err} Nothing changed; try /publish {tag} again shortly, or sign in a "
                f"terminal: {sign_command(tag, None)}."
            ) from err
        return SigningOffer(tuple(to_sign), signer, login)

    async def accept(self, tag: ReleaseTag, code_hash: str, code: str) -> Handover:
        """At the confirmation, before anything moves: trade the login page's ``code`` for an
        identity token of the branch's signer, and load the Sigstore instance to sign with.
        Raises :class:`Refusal` (the confirmation code stays valid)."""
        pending = self.logins.pending(tag, code_hash)
        if pending is None:
            raise Refusal(
                f"The login of this plan is gone (the bot restarted since /publish {tag}); "
                f"type /publish {tag} for a new plan and login link."
            )
        expected = self._signers(tag)
        assert expected is not None  # the offer had one
        try:
            token = await asyncio.to_thread(OobLogin(self.issuer).exchange, pending, code)
        except LoginError as err:
            raise Refusal(str(err)) from err
        found = (token.identity, token.federated_issuer)
        if found != expected:
            raise Refusal(
                f"That login is {found[0]} via {found[1]}; {tag.branch} is signed by "
                f"{expected[0]} via {expected[1]}. Nothing was published: open the plan's "
                f"login link again, log in as {expected[0]}, and confirm with the new code."
            )
        from bot.signing.signer import load_signing_trust  # sigstore is heavy: loaded when used

        try:
            trust = await asyncio.to_thread(load_signing_trust, self._config.trusted_root)
        except ConfigError as err:
            raise Refusal(f"{err} Nothing was published.") from err
        return Handover(token, found, trust)

    async def _unsigned(self, plan: PublishPlan) -> list[str]:
        """The plan's files that must be signed and have no staged signature; a staged
        signature that does not verify is refused (it would be published)."""
        from bot.signing.signer import registered_by

        tag = plan.tag
        registered = registered_by(self._profile, tag)
        staged = {f.path for f in plan.files}
        missing, invalid = [], []
        for f in plan.files:
            if not (self._profile.needs_signature(tag, f.path) or registered(f.path)):
                continue
            if f.path + BUNDLE_SUFFIX not in staged:
                missing.append(f.path)
                continue
            verdict = await self._verify(tag, f.path, f.sha256)
            if verdict is not None:
                invalid.append(f"{f.path}: {verdict}")
        if invalid:
            raise Refusal(
                f"{tag} cannot be published: the staged signature of {'; '.join(invalid)}. "
                f"Remove the bad signature files (the bot then signs at /publish) or run: "
                f"{sign_command(tag, None)}"
            )
        return missing

    async def _verify(self, tag: ReleaseTag, path: str, sha256: str) -> str | None:
        """Why the staged bundle of ``path`` is not valid, or None when it is."""
        verifier, storage = self._conn.verifier, self._conn.storage
        assert verifier is not None
        try:
            bundle = await asyncio.to_thread(storage.read, tag, path + BUNDLE_SUFFIX, MAX_BUNDLE)
        except StorageError as err:
            return str(err)
        result = await asyncio.to_thread(verifier.verify, tag, path, sha256, bundle)
        return None if result.status is SignatureStatus.VALID else result.reason


def issuer_of(config: Config) -> str:
    """The OIDC issuer of the login: ``[signatures] issuer``, else the one a client trust
    config names, else Sigstore's public (or staging) one."""
    settings = config.model.signatures
    if settings.issuer:
        return settings.issuer
    if settings.trusted_root == "staging":
        return STAGING_ISSUER
    if settings.trusted_root == "production":
        return PUBLIC_ISSUER
    return _trust_config_issuer(config.path(settings.trusted_root)) or PUBLIC_ISSUER


def _trust_config_issuer(path: Path) -> str | None:
    """The OIDC URL of a client trust config's signing config, if the file is one."""
    try:
        document = json.loads(path.read_bytes())
        urls = document["signingConfig"]["oidcUrls"]
        url = urls[0]["url"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    return url if isinstance(url, str) else None
