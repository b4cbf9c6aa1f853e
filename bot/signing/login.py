"""Sigstore's out-of-band login, split in two halves for chat: at ``/publish`` the bot asks the
issuer where people log in and keeps the PKCE verifier in memory with the offer; at the
confirmation it trades the code the login page showed for an identity token.

The verifier never leaves this process's memory: it is not journaled, logged, or shown (the
link carries only its SHA-256). A restart forgets every pending login; the RM then asks for a
new plan. Blocking (HTTP): callers run it in a worker thread.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from bot.domain.login import (
    CLIENT_ID,
    Pkce,
    endpoint_problem,
    login_link,
    new_pkce,
    token_request,
)
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError

if TYPE_CHECKING:  # sigstore is heavy: imported when a token is made
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityToken

log = logging.getLogger(__name__)

TIMEOUT = 15.0  # seconds for the issuer to answer
MAX_ANSWER = 1 << 16  # a discovery document or a token answer is a few kB


def token_problem(raw: str, reason: str, *, now: float | None = None) -> str:
    """Why sigstore refused the identity token ``raw``, as the end of a sentence: "has
    expired (at …)" for an expired one, which sigstore reports as "malformed or missing
    claims" like any token it cannot decode; else "is not usable (REASON)"."""
    return expired(raw, now=now) or f"is not usable ({reason})"


def expired(raw: str, *, now: float | None = None) -> str | None:
    """ "has expired (at …)" when the JWT ``raw`` is past its expiry, else None."""
    expiry = _expiry(raw)
    leeway = 5  # seconds, as sigstore allows for clock skew
    if expiry is None or expiry + leeway > (time.time() if now is None else now):
        return None
    try:
        at = datetime.datetime.fromtimestamp(expiry, datetime.UTC)
    except (OverflowError, OSError, ValueError):  # an expiry before any calendar
        return "has expired"
    return f"has expired (at {at:%Y-%m-%d %H:%M:%S} UTC)"


def _expiry(raw: str) -> float | None:
    """The ``exp`` claim of a JWT, read without checking anything (None when unreadable):
    only to tell an expired token from a malformed one."""
    parts = raw.split(".")
    if len(parts) != 3 or len(parts[1]) > MAX_ANSWER:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


class LoginError(RelbotError):
    """The login could not be started or completed; the message says why and what to do."""


@dataclass(frozen=True)
class PendingLogin:
    """A login offered with a plan: the link for the RM, and what the exchange needs."""

    link: str
    token_endpoint: str
    pkce: Pkce = field(repr=False)


@dataclass(frozen=True)
class Handover:
    """What a confirmation hands its signing step, in memory: the identity token, who it is
    for, and the Sigstore instance to sign with."""

    token: IdentityToken = field(repr=False)
    identity: tuple[str, str]  # (identity, issuer) the token is for
    trust: ClientTrustConfig = field(repr=False)


class OobLogin:
    """The out-of-band login at one OIDC issuer (``https://oauth2.sigstore.dev/auth``)."""

    def __init__(self, issuer: str, *, timeout: float = TIMEOUT) -> None:
        self.issuer = issuer.rstrip("/")
        self._timeout = timeout

    def begin(self) -> PendingLogin:
        """A new login: where to log in (the issuer's discovery document, read each time so
        a changed issuer is followed) and a fresh PKCE pair. Raises :class:`LoginError`."""
        document = self._get_json(f"{self.issuer}/.well-known/openid-configuration")
        endpoints = {}
        for key in ("authorization_endpoint", "token_endpoint"):
            url = document.get(key)
            problem = "is missing" if not isinstance(url, str) else endpoint_problem(url)
            if problem is not None:
                raise LoginError(
                    f"The Sigstore login at {self.issuer} cannot be used: its {key} {problem}."
                )
            endpoints[key] = str(url)
        pkce = new_pkce(secrets.token_bytes(32), secrets.token_bytes(16))
        link = login_link(endpoints["authorization_endpoint"], pkce)
        return PendingLogin(link, endpoints["token_endpoint"], pkce)

    def exchange(self, pending: PendingLogin, code: str) -> IdentityToken:
        """Trade the login page's ``code`` for an identity token (the code is single-use).
        Raises :class:`LoginError` with one sentence; the code is never repeated in it."""
        from sigstore.oidc import IdentityError, IdentityToken

        try:
            response = httpx.post(
                pending.token_endpoint,
                data=token_request(code, pending.pkce),
                auth=(CLIENT_ID, ""),
                timeout=self._timeout,
                follow_redirects=False,
                trust_env=False,
            )
        except httpx.HTTPError as err:
            raise LoginError(
                f"The Sigstore login at {self.issuer} cannot be reached ({type(err).__name__})"
                "; nothing was published, try again shortly."
            ) from None
        if response.status_code in (400, 401):  # invalid_grant: used, expired or not ours
            raise LoginError(
                "The login service refused that login code (it was used already, has "
                "expired, or belongs to another login); nothing was published. Open the "
                "plan's login link again, log in, and confirm with the new code."
            )
        answer = self._json(response)
        raw = answer.get("access_token")
        if not isinstance(raw, str) or not raw:
            raise LoginError(
                f"The Sigstore login at {self.issuer} answered without an identity token; "
                "nothing was published."
            )
        try:
            return IdentityToken(raw)
        except IdentityError as err:
            raise LoginError(
                f"The identity token of that login {token_problem(raw, str(err))}; nothing "
                "was published. Log in again and confirm with the new code."
            ) from None

    def _get_json(self, url: str) -> dict[str, object]:
        try:
            response = httpx.get(
                url, timeout=self._timeout, follow_redirects=False, trust_env=False
            )
        except httpx.HTTPError as err:
            raise LoginError(
                f"The Sigstore login at {self.issuer} cannot be reached ({type(err).__name__})."
            ) from None
        return self._json(response)

    def _json(self, response: httpx.Response) -> dict[str, object]:
        if response.status_code != 200 or len(response.content) > MAX_ANSWER:
            raise LoginError(
                f"The Sigstore login at {self.issuer} answered {response.status_code} to "
                f"{response.request.url.path}."
            )
        try:
            document = response.json()
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise LoginError(f"The Sigstore login at {self.issuer} answered something not JSON.")
        return document


class Logins:
    """What the bot keeps of logins, in memory only: the pending login of each plan offered
    (by release and code hash) and the identity a confirmation hands to its signing step.
    Thread-safe; a release keeps at most its latest offer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, PendingLogin]] = {}
        self._handed: dict[str, Handover] = {}

    def offer(self, tag: ReleaseTag, code_hash: str, login: PendingLogin) -> None:
        """Remember the login of the plan offered with ``code_hash`` (a newer plan's login
        replaces it, as the newer plan replaces the offer)."""
        with self._lock:
            self._pending[str(tag)] = (code_hash, login)

    def pending(self, tag: ReleaseTag, code_hash: str) -> PendingLogin | None:
        """The login offered with that code, if this process offered it."""
        with self._lock:
            found = self._pending.get(str(tag))
        return found[1] if found is not None and found[0] == code_hash else None

    def hand_over(self, tag: ReleaseTag, handover: Handover) -> None:
        """From the confirmation to its signing step; the pending login is spent."""
        with self._lock:
            self._pending.pop(str(tag), None)
            self._handed[str(tag)] = handover

    def take(self, tag: ReleaseTag) -> Handover | None:
        """The identity handed over for ``tag``, once (the signing step uses it up)."""
        with self._lock:
            return self._handed.pop(str(tag), None)

    def forget(self, tag: ReleaseTag) -> None:
        with self._lock:
            self._pending.pop(str(tag), None)
            self._handed.pop(str(tag), None)

    def retained_tags(self) -> set[str]:
        with self._lock:
            return set(self._pending) | set(self._handed)
