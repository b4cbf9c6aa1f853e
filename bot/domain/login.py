"""Sigstore's out-of-band login, the pure part: the PKCE pair, the login link an RM opens in any
browser, and what a login code and a login endpoint may look like.

The flow is OAuth 2.0's authorization code grant with PKCE (``S256``) and the out-of-band
redirect, as ``sigstore sign`` runs it on a terminal without a browser: the bot keeps the
verifier, the RM opens the link, logs in, and types the code the page shows; the bot trades
that code (with the verifier) for an identity token. Nothing here does I/O or draws random
numbers: the caller passes the random bytes.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

CLIENT_ID = "sigstore"  # Sigstore's public OAuth client, with an empty secret
REDIRECT_URI = "urn:ietf:wg:oauth:2.0:oob"  # out of band: the page shows the code
SCOPE = "openid email"
PUBLIC_ISSUER = "https://oauth2.sigstore.dev/auth"  # Sigstore's public Dex
STAGING_ISSUER = "https://oauth2.sigstage.dev/auth"
# An authorization code as login pages show them (Dex: 25 lowercase letters and digits):
# printable, no spaces, no quotes; case matters.
LOGIN_RE = re.compile(r"[A-Za-z0-9._~+/=-]{4,512}")


@dataclass(frozen=True)
class Pkce:
    """One login's secrets: ``verifier`` stays with the bot (in memory only), ``challenge``
    and ``state`` go into the link."""

    verifier: str = field(repr=False)
    challenge: str
    state: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def new_pkce(verifier_bytes: bytes, state_bytes: bytes) -> Pkce:
    """The PKCE pair (RFC 7636, ``S256``) and the ``state`` from random bytes (32 and 16:
    ``secrets.token_bytes``)."""
    if len(verifier_bytes) < 32 or len(state_bytes) < 16:
        raise ValueError("a login needs at least 32 random bytes for its verifier, 16 for state")
    verifier = _b64(verifier_bytes)
    challenge = _b64(hashlib.sha256(verifier.encode()).digest())
    return Pkce(verifier, challenge, _b64(state_bytes))


def login_link(authorization_endpoint: str, pkce: Pkce) -> str:
    """The URL the RM opens: the issuer's authorization endpoint with the request."""
    query = urlencode(
        {
            "response_type": "code",
            "client_id": CLIENT_ID,
            "client_secret": "",
            "scope": SCOPE,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": pkce.challenge,
            "code_challenge_method": "S256",
            "state": pkce.state,
        }
    )
    joiner = "&" if urlsplit(authorization_endpoint).query else "?"
    return f"{authorization_endpoint}{joiner}{query}"


def token_request(code: str, pkce: Pkce) -> dict[str, str]:
    """The form posted to the token endpoint (with HTTP basic auth ``sigstore:``)."""
    return {
        "grant_type": "authorization_code",
        "redirect_uri": REDIRECT_URI,
        "code": code,
        "code_verifier": pkce.verifier,
    }


def endpoint_problem(url: str) -> str | None:
    """Why ``url`` may not carry a login (None when it may): ``https://``, or ``http://`` on
    the loopback interface only (a test's private instance); never credentials in it."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "is not a URL"
    if parts.username or parts.password:
        return "carries credentials"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and _loopback(host):
        return None
    return "must be an https:// URL (http:// only on 127.0.0.1, ::1 or localhost)"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
