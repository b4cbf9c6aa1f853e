"""The signer: sign, in staging, every file the release database will list (and every file
whose signature the gate checks) that has no valid ``FILE.sigstore`` yet, with one login.
``relbot sign TAG`` is wired by :func:`bot.app.run_sign`; the sign step of a publish signs
digests with :func:`sign_digests`.

Files are hashed where they are (on the server for SFTP); sigstore-python signs the digests
(``Hashed`` input) with one short-lived certificate; ``FILE.sigstore``, ``FILE.sig`` and
``FILE.crt`` (as ``sigstore sign --bundle --signature --certificate`` writes them) are put
beside each file, then every written bundle is verified like the gate verifies it.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import requests
from cryptography.hazmat.primitives.serialization import Encoding
from sigstore.errors import Error as SigstoreError
from sigstore.hashes import Hashed
from sigstore.models import Bundle, ClientTrustConfig
from sigstore.oidc import ExpiredIdentity, IdentityToken, Issuer, IssuerError
from sigstore.sign import SigningContext
from sigstore_models.common.v1 import HashAlgorithm

from bot.domain.files import Listing
from bot.domain.profile import Profile
from bot.domain.signing import BUNDLE_SUFFIX, SIDECARS, SignatureStatus
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RelbotError, StorageError
from bot.ports import SignatureVerifier, Storage
from bot.signing.login import expired
from bot.signing.verifier import PINNED_ROOTS, UNDATED, first_line, is_client_trust_config

__all__ = [
    "SIDECARS",
    "TOKEN_ENV",
    "SigningError",
    "SigningOutcome",
    "files_to_sign",
    "identity_token",
    "load_signing_trust",
    "sign_digests",
    "sign_release",
]

TOKEN_ENV = "SIGSTORE_IDENTITY_TOKEN"
MAX_BUNDLE = 1 << 20
# What sigstore-python raises, by public name, when a service refuses or cannot be reached.
_SIGNING_ERRORS = (SigstoreError, requests.RequestException, ExpiredIdentity)
# Signatures in flight at once (one Signer, one certificate: sigstore's clients keep a session
# per thread, and `sigstore sign` shares its Signer across a pool the same way). Each mostly
# waits, for a timestamp then for the log, and a Rekor v2 log answers an entry only once its
# batch is in (seconds): n files take ceil(n / threads) batches. 32, the most `sigstore sign`
# itself ever runs at once (Python's default pool), puts the ~60 signed files of a CPython
# release in two batches, well inside the certificate's 10 minutes, without asking more of the
# public-good services than their own client does.
_PARALLEL = 32
_REASON_LIMIT = 200  # characters of an error kept in a signing failure's reason


@dataclass(frozen=True)
class SigningOutcome:
    """What ``relbot sign`` did: ``signed`` and ``already`` are paths, ``failed`` pairs a path
    with the reason it has no valid signature now."""

    tag: ReleaseTag
    signed: tuple[str, ...] = ()
    already: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    identity: str = ""

    @property
    def ok(self) -> bool:
        return not self.failed

    def report(self) -> str:
        """The lines ``relbot sign`` prints."""
        lines = []
        if self.signed:
            lines.append(f"Signed {_files(len(self.signed))} of {self.tag} as {self.identity}:")
            lines += [f"  {p}" for p in self.signed]
        if self.already:
            lines.append(f"Already signed: {_files(len(self.already))}.")
            lines += [f"  {p}" for p in self.already]
        if self.failed:
            lines.append(f"Could not sign {_files(len(self.failed))}:")
            lines += [f"  {p}: {why}" for p, why in self.failed]
        if not self.failed and not self.signed:
            lines.append(f"Nothing to sign: every file of {self.tag} has a valid signature.")
        return "\n".join(lines)


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def files_to_sign(
    profile: Profile, tag: ReleaseTag, listing: Listing, registered: Callable[[str], bool]
) -> list[str]:
    """Staged regular files that python.org will list (``registered``) or whose signature
    the gate checks (required files the profile says are signed), in listing order. Pure."""
    signed = {f.path for f in profile.expected(tag) if profile.needs_signature(tag, f.path)}
    return [
        path
        for path, entry in listing.items()
        if entry.regular and not entry.has_partial_name and (path in signed or registered(path))
    ]


def registered_by(profile: Profile, tag: ReleaseTag) -> Callable[[str], bool]:
    """Whether python.org's release database lists a staged path (the profile's [pydotorg]
    rules; a profile without them registers nothing)."""
    from bot.domain.records import PydotorgSettings

    try:
        settings = PydotorgSettings.from_profile(profile)
    except ConfigError:
        return lambda path: False
    return lambda path: "/" not in path and settings.rule_for(tag, path) is not None


def load_signing_trust(setting: str) -> ClientTrustConfig:
    """The Sigstore instance to sign with: ``production``/``staging`` (their current trust
    config, fetched from Sigstore's TUF repository: signing needs the network anyway) or a
    client trust config file. Raises :class:`ConfigError`."""
    if setting in PINNED_ROOTS:
        try:
            if setting == "production":
                return ClientTrustConfig.production()
            return ClientTrustConfig.staging()
        except (SigstoreError, OSError) as err:
            raise ConfigError(
                f"Cannot fetch Sigstore {setting}'s trust config "
                f"({first_line(err, _REASON_LIMIT)})."
            ) from err
    path = Path(setting)
    try:
        text = path.read_text(encoding="utf-8")
        document: object = json.loads(text)
    except (OSError, ValueError) as err:
        raise ConfigError(f"signatures.trusted_root: cannot read {path.name} ({err}).") from err
    if not is_client_trust_config(document):
        raise ConfigError(
            f"signatures.trusted_root: {path.name} is a trusted root only; signing needs a "
            "client trust config (trusted root + signing config) naming the CA and log."
        )
    try:
        trust = ClientTrustConfig.from_json(text)
        trust.signing_config  # noqa: B018 - validates the services now, not mid-signing
    except (SigstoreError, ValueError) as err:
        raise ConfigError(
            f"signatures.trusted_root: {path.name} is not a usable client trust config "
            f"({first_line(err, _REASON_LIMIT)})."
        ) from err
    return trust


def identity_token(
    trust: ClientTrustConfig, *, oob: bool | None = None, env: Mapping[str, str] = os.environ
) -> IdentityToken:
    """One identity token: ``SIGSTORE_IDENTITY_TOKEN`` if set, else a login with the
    instance's OIDC provider: in a browser, or (``oob``, or by default in an SSH session
    without a display) by pasting a code into this terminal. Raises :class:`RelbotError`."""
    raw = env.get(TOKEN_ENV, "").strip()
    try:
        if raw:
            return IdentityToken(raw)
        issuer = Issuer(trust.signing_config.get_oidc_url())
        if oob is None:
            oob = bool(env.get("SSH_CONNECTION")) and not (
                env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")
            )
        return issuer.identity_token(force_oob=oob)
    except (*_SIGNING_ERRORS, IssuerError) as err:
        where = TOKEN_ENV if raw else "the login"  # a blank variable is no token: not used
        reason = first_line(err, _REASON_LIMIT)
        if raw and (late := expired(raw)):  # sigstore calls it "malformed or missing claims"
            reason = f"the token {late}"
        raise RelbotError(f"No identity token from {where}: {reason}.") from err


def sign_release(
    tag: ReleaseTag,
    storage: Storage,
    verifier: SignatureVerifier,
    trust: Callable[[], ClientTrustConfig],
    paths: Sequence[str],
    signer_of: Callable[[ReleaseTag], tuple[str, str] | None],
    token: Callable[[], IdentityToken],
    listing: Listing,
) -> SigningOutcome:
    """Sign the ``paths`` of ``tag`` that have no valid bundle. ``token`` is called at most
    once, and only when something needs signing. Raises :class:`RelbotError` for what
    stops everything (no signer for the branch, a token for someone else, storage down)."""
    expected = signer_of(tag)
    if expected is None:
        raise RelbotError(
            f"No signer is configured for branch {tag.branch}; add it to "
            "[signatures] identities. Nothing was signed."
        )
    digests = storage.digest(tag, paths, fresh=True)
    already: list[str] = []
    pending: list[str] = []
    for path in paths:
        bundle_path = path + BUNDLE_SUFFIX
        entry = listing.get(bundle_path)
        bundle = (
            storage.read(tag, bundle_path, MAX_BUNDLE)
            if entry is not None and entry.regular
            else None
        )
        verdict = verifier.verify(tag, path, digests[path], bundle)
        (already if verdict.status is SignatureStatus.VALID else pending).append(path)
    if not pending:
        return SigningOutcome(tag, already=tuple(already), identity=expected[0])

    identity = token()
    if (identity.identity, identity.federated_issuer) != expected:
        raise RelbotError(
            f"The identity token is for {identity.identity} ({identity.federated_issuer}); "
            f"{tag.branch} is signed by {expected[0]} ({expected[1]}). Log in as "
            f"{expected[0]} through {expected[1]}. Nothing was signed."
        )
    try:
        bundles, failed = sign_digests(trust(), identity, {p: digests[p] for p in pending})
    except SigningError as err:
        return SigningOutcome(
            tag,
            already=tuple(already),
            failed=tuple((p, str(err)) for p in pending),
            identity=expected[0],
        )

    for path, made in bundles.items():
        try:
            _write(storage, tag, path, made, listing)
        except StorageError as err:
            failed[path] = str(err)

    # Verify what was written, as the gate will: read back, check against the branch signer.
    signed = []
    for path in bundles:
        if path in failed:
            continue
        try:
            written = storage.read(tag, path + BUNDLE_SUFFIX, MAX_BUNDLE)
        except StorageError as err:
            failed[path] = f"written, but it cannot be read back: {err}"
            continue
        verdict = verifier.verify(tag, path, digests[path], written)
        if verdict.status is SignatureStatus.VALID:
            signed.append(path)
        else:
            failed[path] = f"written, but it does not verify: {verdict.reason}"
    return SigningOutcome(
        tag,
        signed=tuple(signed),
        already=tuple(already),
        failed=tuple((p, failed[p]) for p in pending if p in failed),
        identity=expected[0],
    )


class SigningError(RelbotError):
    """No signing certificate: the CA refused the identity token or cannot be reached."""


def sign_digests(
    trust: ClientTrustConfig, identity: IdentityToken, digests: Mapping[str, str]
) -> tuple[dict[str, Bundle], dict[str, str]]:
    """Sign each path's SHA-256 (hex) with one short-lived certificate for ``identity``:
    the bundles, and the paths that failed with why (the transparency log refused or could
    not be reached). ``relbot sign`` and the signing at the confirmation both sign here.
    Raises :class:`SigningError` when no certificate can be had."""
    failed: dict[str, str] = {}
    bundles: dict[str, Bundle] = {}
    try:
        context = SigningContext.from_trust_config(trust)
        with context.signer(identity) as signer, ThreadPoolExecutor(_PARALLEL) as pool:

            def one(path: str) -> tuple[str, Bundle | str]:
                hashed = Hashed(
                    algorithm=HashAlgorithm.SHA2_256, digest=bytes.fromhex(digests[path])
                )
                try:
                    return path, signer.sign_artifact(hashed)
                except Exception as err:
                    if not _refused_or_unreachable(err):
                        raise
                    return path, f"signing failed: {_why_unsigned(err)}"

            for path, result in pool.map(one, list(digests)):
                if isinstance(result, str):
                    failed[path] = result
                else:
                    bundles[path] = result
    except Exception as err:
        if not _refused_or_unreachable(err):
            raise
        # No certificate: the login was refused, or the CA is unreachable.
        raise SigningError(f"no signing certificate ({first_line(err, _REASON_LIMIT)})") from err
    return bundles, failed


def _why_unsigned(err: Exception) -> str:
    """One file's signing failure in words an RM can act on."""
    if UNDATED in str(err):
        # sigstore-python only warns when the timestamp authority fails, then cannot make a
        # bundle: a Rekor v2 entry dates nothing by itself.
        return "no timestamp from the timestamp authority (a Rekor v2 log entry needs one)"
    return first_line(err, _REASON_LIMIT)


def _refused_or_unreachable(err: Exception) -> bool:
    """Whether ``err`` is how sigstore-python's signer says a service refused or could not be
    reached: one of its public errors or requests', or an exception class of sigstore's own.
    Its Fulcio and Rekor clients (and an expired certificate) raise plain Exceptions of its
    private modules, with no public name or base: they are told by the package that defines
    them, never imported, so an upgrade of sigstore cannot break an import here. A bug
    (``TypeError`` and the like, wherever raised) is not a refusal and goes on up."""
    return isinstance(err, _SIGNING_ERRORS) or type(err).__module__.split(".")[0] == "sigstore"


def sidecar_contents(bundle: Bundle) -> dict[str, bytes]:
    """``.sig``, ``.crt`` and ``.sigstore`` as ``sigstore sign`` writes them."""
    signature = base64.b64encode(bundle.signature).decode()
    certificate = bundle.signing_certificate.public_bytes(Encoding.PEM).decode()
    return {
        ".sig": f"{signature}\n".encode(),
        ".crt": f"{certificate}\n".encode(),
        BUNDLE_SUFFIX: f"{bundle.to_json()}\n".encode(),
    }


def _write(storage: Storage, tag: ReleaseTag, path: str, bundle: Bundle, listing: Listing) -> None:
    # A sidecar already staged belongs to the signature just found missing or invalid: it is
    # replaced. One that appears meanwhile is not overwritten (the write refuses).
    contents = sidecar_contents(bundle)
    for suffix in SIDECARS:
        target = path + suffix
        storage.write(tag, target, contents[suffix], replace=target in listing)
