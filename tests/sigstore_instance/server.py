"""The HTTP face of the test Sigstore instance, its tokens and the trust documents describing it."""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils

from tests.sigstore_instance.ca import CertificateAuthority, key_id, spki_der
from tests.sigstore_instance.log import TransparencyLog, proposed_entry
from tests.sigstore_instance.tiles import TiledLog
from tests.sigstore_instance.tsa import TimestampAuthority

AUDIENCE = "sigstore"
TOKEN_LIFETIME = 600
LOGIN_CODE_LIFETIME = 300.0  # seconds a login code can be traded (Dex: 5 minutes)
OOB_REDIRECT = "urn:ietf:wg:oauth:2.0:oob"
BATCH_DELAY = 0.2  # seconds a Rekor v2 batch stays open (rekor-tiles: about a second)
OPERATOR = "relbot-tests"


@dataclass
class LoginGrant:
    """A code the authorization endpoint showed, waiting to be traded for a token once."""

    token: str
    challenge: str
    redirect_uri: str
    expires_at: float


class OAuthRefused(ValueError):
    """What the token endpoint answers 400 with: an OAuth error code and a description."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _rfc3339(when: datetime.datetime) -> str:
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Server(ThreadingHTTPServer):
    # A signer sends dozens of requests at once; the default backlog of 5 would drop
    # connections that Sigstore's services (behind load balancers) accept.
    request_queue_size = 128
    daemon_threads = True


class SigstoreInstance:
    """CA + CT log key + token issuer + timestamp authority on one loopback port, the
    transparency logs (Rekor v1 and v2) on another (so a test can stop the logs alone,
    mid-signing).

    ``rekor_version`` chooses what the signing config lists, as Sigstore lists it: 1 the v1
    log alone (no timestamp authority: the log's integrated time dates a signature); 2 the v2
    log beside the v1 one, from the same operator (so clients take v2), and the timestamp
    authority. The trusted root always lists both logs and the authority. ``batch_delay`` is
    how long the v2 log gathers a batch before answering its entries."""

    def __init__(self, rekor_version: int = 1, batch_delay: float = BATCH_DELAY) -> None:
        if rekor_version not in (1, 2):
            raise ValueError(f"Rekor v{rekor_version}? 1 or 2")
        self.rekor_version = rekor_version
        self.ca = CertificateAuthority()
        self.log = TransparencyLog()
        self.tiles = TiledLog(batch_delay=batch_delay)
        self.tsa = TimestampAuthority()
        self.tsa_down = False  # the timestamp authority answers 503 (overloaded, down)
        self.token_key = ec.generate_private_key(ec.SECP256R1())
        self.certificates_issued = 0
        self.refusals: list[str] = []
        # Codes handed out by the authorization endpoint, traded for a token once.
        self._codes: dict[str, LoginGrant] = {}
        self._codes_lock = threading.Lock()
        self.login_as: tuple[str, str] = ("hugo@python.org", "https://github.com/login/oauth")
        self.login_code_lifetime = LOGIN_CODE_LIFETIME
        self.logins_traded = 0
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._log_server: _Server | None = None
        self._log_thread: threading.Thread | None = None
        self._log_port = 0
        self._log_entries_left: int | None = None  # stop the log after this many entries
        self._count_lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def log_url(self) -> str:
        return f"http://127.0.0.1:{self._log_port}"

    @property
    def tsa_url(self) -> str:
        return self.url + "/api/v1/timestamp"

    @property
    def issuer_url(self) -> str:
        """The OIDC issuer (``[signatures] issuer``): its discovery document is below it."""
        return self.url + "/oauth"

    def __enter__(self) -> SigstoreInstance:
        self._thread.start()
        self.start_log()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_log()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- the transparency log's own server -------------------------------------------------

    def start_log(self) -> None:
        """Serve the log (again, on the same port once it had one)."""
        if self._log_server is not None:
            return
        self.tiles.start()
        server = _Server(("127.0.0.1", self._log_port), _log_handler(self))
        server.daemon_threads = True
        self._log_port = int(server.server_address[1])
        self._log_server = server
        self._log_thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._log_thread.start()

    def stop_log(self) -> None:
        """Really stop the log: its socket closes, so clients get "connection refused"."""
        server, thread = self._log_server, self._log_thread
        self._log_server, self._log_thread = None, None
        self.tiles.stop()  # v2 submitters waiting for a batch get no entry
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    def stop_log_after(self, entries: int) -> None:
        """Let the log take ``entries`` more entries, then stop it (from another thread, as
        an operator would pull the plug mid-signing). A v2 log stops with the batch holding
        the last of them still open, so none of that batch is answered."""
        self._log_entries_left = entries

    def _entry_logged(self) -> None:
        with self._count_lock:  # handler threads count at once
            if self._log_entries_left is None:
                return
            self._log_entries_left -= 1
            if self._log_entries_left > 0:
                return
            self._log_entries_left = None
        self.tiles.stop()  # now, before the open batch closes; the socket follows
        threading.Thread(target=self.stop_log, daemon=True).start()

    @property
    def log_is_up(self) -> bool:
        return self._log_server is not None

    # -- tokens ----------------------------------------------------------------------------

    def token(self, identity: str, issuer: str, *, lifetime: int = TOKEN_LIFETIME) -> str:
        """An identity token for ``identity`` from ``issuer``, signed by this instance."""
        now = int(time.time())
        claims = {
            "iss": issuer,
            "sub": identity,
            "email": identity,
            "email_verified": True,
            "aud": AUDIENCE,
            "iat": now,
            "nbf": now - 1,
            "exp": now + lifetime,
        }
        return jwt.encode(claims, self.token_key, algorithm="ES256")

    def _identity(self, authorization: str) -> tuple[str, str]:
        """(identity, issuer) of a bearer token this instance signed; ValueError otherwise."""
        scheme, _, raw = authorization.partition(" ")
        if scheme != "Bearer" or not raw:
            raise ValueError("no bearer token")
        try:
            claims = jwt.decode(
                raw,
                self.token_key.public_key(),
                algorithms=["ES256"],
                audience=AUDIENCE,
                options={"require": ["iss", "sub", "aud", "exp", "iat"]},
            )
        except jwt.PyJWTError as err:
            raise ValueError(f"token refused: {err}") from err
        identity = claims.get("email") or claims["sub"]
        return str(identity), str(claims["iss"])

    # -- services --------------------------------------------------------------------------

    def _signing_cert(self, authorization: str, body: bytes) -> dict[str, Any]:
        identity, issuer = self._identity(authorization)
        request = json.loads(body)
        pem = base64.b64decode(request["certificateSigningRequest"])
        csr = x509.load_pem_x509_csr(pem)
        if not csr.is_signature_valid:
            raise ValueError("the CSR's signature does not hold: no proof of possession")
        public_key = csr.public_key()
        if not isinstance(public_key, ec.EllipticCurvePublicKey):
            raise ValueError("only EC keys are certified")
        leaf = self.ca.issue(public_key, identity, issuer)
        self.certificates_issued += 1
        chain = [c.public_bytes(serialization.Encoding.PEM).decode() for c in (leaf, self.ca.root)]
        return {"signedCertificateEmbeddedSct": {"chain": {"certificates": chain}}}

    def _log_entry(self, body: bytes) -> dict[str, Any]:
        proposed = proposed_entry(body)
        spec = proposed["spec"]
        certificate = x509.load_pem_x509_certificate(
            base64.b64decode(spec["signature"]["publicKey"]["content"])
        )
        key = certificate.public_key()
        if not isinstance(key, ec.EllipticCurvePublicKey):
            raise ValueError("only EC keys are logged")
        digest = bytes.fromhex(spec["data"]["hash"]["value"])
        try:
            key.verify(
                base64.b64decode(spec["signature"]["content"]),
                digest,
                ec.ECDSA(utils.Prehashed(hashes.SHA256())),
            )
        except InvalidSignature as err:
            raise ValueError("the entry's signature does not verify") from err
        return self.log.append(proposed)

    # -- documents -------------------------------------------------------------------------

    def trusted_root(self) -> dict[str, Any]:
        start = _rfc3339(self.ca.not_before)

        def log_key(key: ec.EllipticCurvePrivateKey, url: str) -> dict[str, Any]:
            public = key.public_key()
            return {
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": _b64(spki_der(public)),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": start},
                },
                "logId": {"keyId": _b64(key_id(public))},
            }

        root_der = self.ca.root.public_bytes(serialization.Encoding.DER)
        tiles_key = self.tiles.key.public_key()
        tiles = {
            "baseUrl": self.log_url,
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": _b64(
                    tiles_key.public_bytes(
                        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
                    )
                ),
                "keyDetails": "PKIX_ED25519",
                "validFor": {"start": start},
            },
            "logId": {"keyId": _b64(self.tiles.log_id)},
        }
        tsa = {
            "subject": {"organization": "relbot tests", "commonName": "relbot test tsa"},
            "uri": self.tsa_url,
            "certChain": {
                "certificates": [
                    {"rawBytes": _b64(c.public_bytes(serialization.Encoding.DER))}
                    for c in self.tsa.chain
                ]
            },
            "validFor": {"start": _rfc3339(self.tsa.not_before)},
        }
        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log_key(self.log.key, self.log_url), tiles],
            "certificateAuthorities": [
                {
                    "subject": {
                        "organization": "relbot tests",
                        "commonName": "relbot test sigstore",
                    },
                    "uri": self.url,
                    "certChain": {"certificates": [{"rawBytes": _b64(root_der)}]},
                    "validFor": {"start": start},
                }
            ],
            "ctlogs": [log_key(self.ca.ct_key, self.url + "/ct")],
            "timestampAuthorities": [tsa],
        }

    def signing_config(self) -> dict[str, Any]:
        def service(url: str, version: int = 1) -> dict[str, Any]:
            return {
                "url": url,
                "majorApiVersion": version,
                "validFor": {"start": _rfc3339(self.ca.not_before)},
                "operator": OPERATOR,
            }

        v2 = self.rekor_version == 2
        return {
            "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
            "caUrls": [service(self.url)],
            "oidcUrls": [service(self.issuer_url)],
            "rekorTlogUrls": [
                *([service(self.log_url, 2)] if v2 else []),
                service(self.log_url),
            ],
            "tsaUrls": [service(self.tsa_url)] if v2 else [],
            "rekorTlogConfig": {"selector": "ANY"},
            "tsaConfig": {"selector": "ANY"},
        }

    def trust_config(self) -> dict[str, Any]:
        return {
            "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
            "trustedRoot": self.trusted_root(),
            "signingConfig": self.signing_config(),
        }

    def write_trust_config(self, path: Path) -> Path:
        path.write_text(json.dumps(self.trust_config(), indent=2), encoding="utf-8")
        return path

    def write_trusted_root(self, path: Path) -> Path:
        path.write_text(json.dumps(self.trusted_root(), indent=2), encoding="utf-8")
        return path

    # -- the out-of-band login -------------------------------------------------------------

    def _authorize(self, query: str) -> str:
        """The authorization endpoint: the request must be sigstore's out-of-band one with a
        PKCE ``S256`` challenge; "logs in" :attr:`login_as` (a person who would log in here
        in a browser) and returns the code the page shows."""
        params = {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
        wanted = {"client_id": AUDIENCE, "response_type": "code", "redirect_uri": OOB_REDIRECT}
        for key, value in wanted.items():
            if params.get(key) != value:
                raise ValueError(f"{key} must be {value!r}")
        if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
            raise ValueError("a PKCE S256 code_challenge is required")
        if not {"openid", "email"} <= set(params.get("scope", "").split()):
            raise ValueError("scope must ask for openid and email")
        if not params.get("state"):
            raise ValueError("state is required")
        code = secrets.token_urlsafe(18)
        with self._codes_lock:
            self._codes[code] = LoginGrant(
                self.token(*self.login_as),
                params["code_challenge"],
                params["redirect_uri"],
                time.time() + self.login_code_lifetime,
            )
        return code

    def expire_login_codes(self) -> None:
        """Every code shown so far expires now (as minutes passing would)."""
        with self._codes_lock:
            for grant in self._codes.values():
                grant.expires_at = 0.0

    def _exchange(self, authorization: str, body: bytes) -> dict[str, Any]:
        """The token endpoint: client ``sigstore`` with an empty secret (HTTP basic), the
        code once, before it expires, with the verifier whose S256 is the challenge."""
        if authorization != "Basic " + base64.b64encode(f"{AUDIENCE}:".encode()).decode():
            raise OAuthRefused("invalid_client", "client sigstore with an empty secret, please")
        form = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
        if form.get("grant_type") != "authorization_code":
            raise OAuthRefused("unsupported_grant_type", "authorization_code only")
        with self._codes_lock:
            grant = self._codes.pop(form.get("code", ""), None)  # single use, even if refused
        if grant is None:
            raise OAuthRefused("invalid_grant", "unknown or already used code")
        if time.time() > grant.expires_at:
            raise OAuthRefused("invalid_grant", "the code has expired")
        if form.get("redirect_uri") != grant.redirect_uri:
            raise OAuthRefused("invalid_grant", "redirect_uri differs from the authorization")
        if _s256(form.get("code_verifier", "")) != grant.challenge:
            raise OAuthRefused("invalid_grant", "the code_verifier does not match the challenge")
        self.logins_traded += 1
        return {"access_token": grant.token, "token_type": "Bearer", "id_token": grant.token}


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class _Handler(BaseHTTPRequestHandler):
    instance: SigstoreInstance

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, payload: object, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, status: int, err: Exception) -> None:
        self.instance.refusals.append(str(err))
        if isinstance(err, OAuthRefused):
            self._send(status, {"error": err.error, "error_description": err.description})
            return
        self._send(status, {"code": status, "message": str(err)})

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))


def _handler(instance: SigstoreInstance) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/oauth/.well-known/openid-configuration":
                self._send(
                    200,
                    {
                        "issuer": instance.issuer_url,
                        "authorization_endpoint": instance.issuer_url + "/auth",
                        "token_endpoint": instance.issuer_url + "/token",
                        "code_challenge_methods_supported": ["S256"],
                    },
                )
            elif url.path == "/oauth/auth":
                try:
                    code = instance._authorize(url.query)
                except ValueError as err:
                    self._refuse(400, err)
                    return
                self._send(200, code.encode(), "text/plain")
            else:
                self._send(404, {"message": f"no {url.path}"})

        def do_POST(self) -> None:
            body = self._body()
            path = urlsplit(self.path).path
            try:
                if path == "/api/v2/signingCert":
                    answer = instance._signing_cert(self.headers.get("Authorization", ""), body)
                    self._send(200, answer)
                elif path == "/oauth/token":
                    self._send(200, instance._exchange(self.headers.get("Authorization", ""), body))
                elif path == "/api/v1/timestamp" and instance.tsa_down:
                    self._send(503, {"code": 503, "message": "timestamp authority unavailable"})
                elif path == "/api/v1/timestamp":
                    reply = instance.tsa.respond(body)
                    self._send(200, reply, "application/timestamp-reply")
                else:
                    self._send(404, {"message": f"no {path}"})
            except OAuthRefused as err:
                self._refuse(401 if err.error == "invalid_client" else 400, err)
            except (ValueError, KeyError, TypeError, binascii.Error) as err:
                self._refuse(401 if "token" in str(err) else 400, err)

    Handler.instance = instance
    return Handler


def _log_handler(instance: SigstoreInstance) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        def do_POST(self) -> None:
            body = self._body()
            path = urlsplit(self.path).path
            if path not in ("/api/v1/log/entries", "/api/v2/log/entries"):
                self._send(404, {"message": f"no {path}"})
                return
            try:
                if path == "/api/v1/log/entries":
                    entry = instance._log_entry(body)
                    self._send(201, entry)
                    instance._entry_logged()
                    return
                pending = instance.tiles.queue(json.loads(body))
                instance._entry_logged()  # taken, as a v2 log takes it: into the open batch
                self._send(201, instance.tiles.wait(pending))
            except (ValueError, KeyError, TypeError, binascii.Error) as err:
                self._refuse(400, err)
            except TimeoutError as err:  # the log stopped before the entry was in
                self._refuse(503, err)

    Handler.instance = instance
    return Handler
