"""A private Sigstore instance on 127.0.0.1 for tests: no network, real sigstore-python on both
ends.

    with SigstoreInstance() as instance:
        token = instance.token("hugo@python.org", "https://github.com/login/oauth")
        instance.write_trust_config(path)   # a ClientTrustConfig: trusted root + signing config

One HTTP server answers as the CA (Fulcio ``POST /api/v2/signingCert``) and the token issuer
(OpenID discovery; an authorization endpoint that "logs in" ``login_as`` and shows a code; a
token endpoint that trades a code once, before it expires, for client ``sigstore`` with the
PKCE verifier whose S256 is the challenge), so the out-of-band login runs as with Sigstore's
Dex, and the RFC 3161 timestamp authority (``POST /api/v1/timestamp``). ``SigstoreInstance(
rekor_version=2)`` lists the v2 log and the authority in its signing config, as the public-good
instance does. The transparency logs (Rekor v1 ``POST /api/v1/log/entries``, Rekor v2 ``POST
/api/v2/log/entries`` answering once its batch is in) have a server of their own, so a
test can really stop them (``stop_log``, ``stop_log_after``). Tokens are JWTs signed with the
instance's key; the CA refuses any other. Everything is generated when the instance starts.
"""

from __future__ import annotations

from tests.sigstore_instance.server import SigstoreInstance

__all__ = ["SigstoreInstance"]
