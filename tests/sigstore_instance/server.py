"""The HTTP face of the test Sigstore instance, its tokens and the trust documents describing it."""

from __future__ import annotations

import base64
import datetime
import json
import secrets
import threading
import time
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

AUDIENCE = "sigstore"
TOKEN_LIFETIME = 600


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _rfc3339(when: datetime.datetime) -> str:
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SigstoreInstance:
    """CA + CT log key + transparency log + token issuer, served on one loopback port."""

    def __init__(self) -> None:
        self.ca = CertificateAuthority()
        self.log = TransparencyLog()
        self.token_key = ec.generate_private_key(ec.SECP256R1())
        self.certificates_issued = 0
        self.refusals: list[str] = []
        # Codes handed out by the authorization endpoint, traded for a token once.
        self._codes: dict[str, str] = {}
        self.login_as: tuple[str, str] = ("hugo@python.org", "https://github.com/login/oauth")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> SigstoreInstance:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

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
        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log_key(self.log.key, self.url)],
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
            "timestampAuthorities": [],
        }

    def signing_config(self) -> dict[str, Any]:
        def service(url: str) -> dict[str, Any]:
            return {
                "url": url,
                "majorApiVersion": 1,
                "validFor": {"start": _rfc3339(self.ca.not_before)},
                "operator": "relbot-tests",
            }

        return {
            "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
            "caUrls": [service(self.url)],
            "oidcUrls": [service(self.url + "/oauth")],
            "rekorTlogUrls": [service(self.url)],
            "tsaUrls": [],
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
        """The authorization endpoint: a one-time code for :attr:`login_as` (a person who
        would log in here in a browser), shown as the page's text."""
        params = parse_qs(query)
        if params.get("client_id") != [AUDIENCE] or params.get("response_type") != ["code"]:
            raise ValueError("not an authorization request of sigstore")
        code = secrets.token_urlsafe(16)
        self._codes[code] = self.token(*self.login_as)
        return code

    def _exchange(self, body: bytes) -> dict[str, Any]:
        form = parse_qs(body.decode())
        code = (form.get("code") or [""])[0]
        token = self._codes.pop(code, None)
        if form.get("grant_type") != ["authorization_code"] or token is None:
            raise ValueError("invalid_grant")
        return {"access_token": token, "token_type": "Bearer", "id_token": token}


def _handler(instance: SigstoreInstance) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _send(
            self, status: int, payload: object, content_type: str = "application/json"
        ) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _refuse(self, status: int, err: Exception) -> None:
            instance.refusals.append(str(err))
            self._send(status, {"code": status, "message": str(err)})

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/oauth/.well-known/openid-configuration":
                self._send(
                    200,
                    {
                        "issuer": instance.url + "/oauth",
                        "authorization_endpoint": instance.url + "/oauth/auth",
                        "token_endpoint": instance.url + "/oauth/token",
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
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            path = urlsplit(self.path).path
            try:
                if path == "/api/v2/signingCert":
                    answer = instance._signing_cert(self.headers.get("Authorization", ""), body)
                    self._send(200, answer)
                elif path == "/api/v1/log/entries":
                    self._send(201, instance._log_entry(body))
                elif path == "/oauth/token":
                    self._send(200, instance._exchange(body))
                else:
                    self._send(404, {"message": f"no {path}"})
            except (ValueError, KeyError, TypeError) as err:
                self._refuse(401 if "token" in str(err) else 400, err)

    return Handler
