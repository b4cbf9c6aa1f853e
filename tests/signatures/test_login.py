"""The out-of-band login's pure part: the PKCE pair, the link, the token request, and which
endpoints may carry a login."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from bot.domain.commands import CommandError, Confirm, parse_command
from bot.domain.confirmation import login_refusal
from bot.domain.login import (
    LOGIN_RE,
    REDIRECT_URI,
    endpoint_problem,
    login_link,
    new_pkce,
    token_request,
)
from bot.signing.login import LoginError, OobLogin

VERIFIER_BYTES = bytes(range(32))
STATE_BYTES = bytes(range(100, 116))


def test_the_challenge_is_the_s256_of_the_verifier_both_unpadded_base64url() -> None:
    pkce = new_pkce(VERIFIER_BYTES, STATE_BYTES)

    assert pkce.verifier == base64.urlsafe_b64encode(VERIFIER_BYTES).rstrip(b"=").decode()
    digest = hashlib.sha256(pkce.verifier.encode()).digest()
    assert pkce.challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert "=" not in pkce.verifier + pkce.challenge + pkce.state
    assert 43 <= len(pkce.verifier) <= 128  # RFC 7636's bounds


def test_the_verifier_is_never_shown_not_even_by_repr() -> None:
    pkce = new_pkce(VERIFIER_BYTES, STATE_BYTES)
    assert pkce.verifier not in repr(pkce)
    assert pkce.verifier not in login_link("https://issuer.example/auth", pkce)


def test_too_few_random_bytes_are_refused() -> None:
    with pytest.raises(ValueError, match="32 random bytes"):
        new_pkce(b"short", STATE_BYTES)


def test_the_link_asks_sigstore_s_out_of_band_grant_with_pkce() -> None:
    pkce = new_pkce(VERIFIER_BYTES, STATE_BYTES)

    link = login_link("https://oauth2.sigstore.dev/auth/auth", pkce)

    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == (
        "https",
        "oauth2.sigstore.dev",
        "/auth/auth",
    )
    query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    assert query == {
        "response_type": "code",
        "client_id": "sigstore",
        "client_secret": "",
        "scope": "openid email",
        "redirect_uri": "urn:ietf:wg:oauth:2.0:oob",
        "code_challenge": pkce.challenge,
        "code_challenge_method": "S256",
        "state": pkce.state,
    }


def test_an_endpoint_with_a_query_gets_the_request_appended() -> None:
    link = login_link("https://idp.example/auth?tenant=psf", new_pkce(VERIFIER_BYTES, STATE_BYTES))
    assert link.startswith("https://idp.example/auth?tenant=psf&response_type=code&")


def test_the_token_request_carries_the_code_and_the_verifier() -> None:
    pkce = new_pkce(VERIFIER_BYTES, STATE_BYTES)
    assert token_request("abc123", pkce) == {
        "grant_type": "authorization_code",
        "redirect_uri": REDIRECT_URI,
        "code": "abc123",
        "code_verifier": pkce.verifier,
    }


@pytest.mark.parametrize(
    "url",
    [
        "https://oauth2.sigstore.dev/auth",
        "http://127.0.0.1:8080/oauth",
        "http://[::1]:8080/oauth",
        "http://localhost:9/oauth",
    ],
)
def test_https_or_loopback_http_may_carry_a_login(url: str) -> None:
    assert endpoint_problem(url) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://oauth2.sigstore.dev/auth",  # cleartext across the network
        "http://10.0.0.1/auth",
        "ftp://example.org/auth",
        "https://user:secret@example.org/auth",
        "https:///no-host",
        "oauth2.sigstore.dev/auth",
    ],
)
def test_anything_else_is_refused(url: str) -> None:
    assert endpoint_problem(url) is not None


def test_the_confirm_line_takes_the_login_code_as_typed() -> None:
    command = parse_command("/publish 3.14.1 confirm k7q2xf3m rcy5ux3t3lhmdqkrfvk5c4vmq", [])
    assert isinstance(command, Confirm)
    assert (command.code, command.login) == ("K7Q2XF3M", "rcy5ux3t3lhmdqkrfvk5c4vmq")
    assert "rcy5ux3t3" not in repr(command)  # never in a log line by accident
    plain = parse_command("/publish 3.14.1 confirm K7Q2XF3M", [])
    assert isinstance(plain, Confirm) and plain.login is None


@pytest.mark.parametrize(
    "line",
    [
        "/publish 3.14.1 confirm K7Q2XF3M a<script>",
        "/publish 3.14.1 confirm K7Q2XF3M abc",  # too short to be a code
        "/publish 3.14.1 confirm K7Q2XF3M one two",
    ],
)
def test_a_malformed_login_code_is_refused_without_echoing_it(line: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse_command(line, [])
    typed = line.split()[4]
    assert typed not in str(caught.value)
    assert "K7Q2XF3M" not in str(caught.value)


def test_login_codes_as_dex_shows_them_are_accepted() -> None:
    assert LOGIN_RE.fullmatch("rcy5ux3t3lhmdqkrfvk5c4vmq")
    assert LOGIN_RE.fullmatch("4/0AVG7fiQ-abc_def.ghi~jkl")


def test_a_plan_that_signs_needs_the_login_and_one_that_does_not_takes_none() -> None:
    needed = login_refusal("3.14.1", 12, None)
    assert needed is not None and "signs 12 files" in needed
    assert "/publish 3.14.1 confirm <code> <login>" in needed
    assert login_refusal("3.14.1", 12, "rcy5ux3t3l") is None
    unneeded = login_refusal("3.14.1", 0, "rcy5ux3t3l")
    assert unneeded is not None and "rcy5ux3t3l" not in unneeded
    assert login_refusal("3.14.1", 0, None) is None


class _Discovery(BaseHTTPRequestHandler):
    document: ClassVar[dict[str, str]] = {}

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        body = json.dumps(self.document).encode()
        self.send_response(200 if self.path.endswith("/openid-configuration") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def issuer() -> Iterator[tuple[str, type[_Discovery]]]:
    """An OIDC issuer on loopback whose discovery document a test writes."""

    class Handler(_Discovery):
        document: ClassVar[dict[str, str]] = {}

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/oauth", Handler
    server.shutdown()
    server.server_close()


def test_a_discovered_endpoint_in_cleartext_across_the_network_is_refused(
    issuer: tuple[str, type[_Discovery]],
) -> None:
    url, handler = issuer
    handler.document = {
        "authorization_endpoint": "http://login.example.org/auth",
        "token_endpoint": url + "/token",
    }
    with pytest.raises(LoginError, match="its authorization_endpoint must be an https:// URL"):
        OobLogin(url).begin()


def test_each_login_gets_its_own_pkce_pair(issuer: tuple[str, type[_Discovery]]) -> None:
    url, handler = issuer
    handler.document = {"authorization_endpoint": url + "/auth", "token_endpoint": url + "/token"}
    first, second = OobLogin(url).begin(), OobLogin(url).begin()
    assert first.pkce.verifier != second.pkce.verifier and first.link != second.link
    assert first.link.startswith(url + "/auth?") and first.token_endpoint == url + "/token"


def test_an_issuer_that_cannot_be_reached_is_one_sentence() -> None:
    with pytest.raises(LoginError, match=r"cannot be reached \(ConnectError\)"):
        OobLogin("http://127.0.0.1:9/oauth", timeout=2).begin()
