"""A private Sigstore instance on 127.0.0.1 for tests: no network, real sigstore-python on both
ends.

    with SigstoreInstance() as instance:
        token = instance.token("hugo@python.org", "https://github.com/login/oauth")
        instance.write_trust_config(path)   # a ClientTrustConfig: trusted root + signing config

One HTTP server answers as every service: the CA (Fulcio ``POST /api/v2/signingCert``), the
transparency log (Rekor v1 ``POST /api/v1/log/entries``) and the token issuer (OpenID discovery,
an authorization endpoint that hands out a code, and a token endpoint trading it for a token, so
the out-of-band login of sigstore-python runs too). Tokens are JWTs signed with the instance's
key; the CA refuses any other. Everything is generated when the instance starts.
"""

from __future__ import annotations

from tests.sigstore_instance.server import SigstoreInstance

__all__ = ["SigstoreInstance"]
