"""The certificate authority of the test Sigstore instance: Fulcio's job, short-lived code-signing
certificates for the identity in a token, each with an embedded SCT from the instance's CT log.

What sigstore-python checks and this CA therefore gets right: the chain to the root in the trusted
root (webpki profile: AKI/SKI, critical SAN, CA basic constraints), key usage digitalSignature,
extended key usage codeSigning, the OIDC issuer in 1.3.6.1.4.1.57264.1.1 (raw) and .1.8 (DER
UTF8String), and exactly one precertificate SCT whose signature a CT key of the trusted root checks
(RFC 6962 section 3.2: the SCT signs the TBS certificate without the SCT extension).
"""

from __future__ import annotations

import datetime
import hashlib
import secrets
import struct

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from tests.sigstore_instance import der

ISSUER_V1_OID = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2_OID = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
SCT_LIST_OID = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
CERT_LIFETIME = datetime.timedelta(minutes=10)  # Fulcio's


def spki_der(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_id(key: ec.EllipticCurvePublicKey) -> bytes:
    """How Sigstore names a log key: SHA-256 of its SubjectPublicKeyInfo."""
    return hashlib.sha256(spki_der(key)).digest()


class CertificateAuthority:
    """A self-signed root and a CT log key; :meth:`issue` is Fulcio's signingCert."""

    def __init__(self, name: str = "relbot test sigstore") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.ct_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "relbot tests"),
                x509.NameAttribute(NameOID.COMMON_NAME, name),
            ]
        )
        self.subject = subject
        self.not_before = now - datetime.timedelta(days=1)
        self.root = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.not_before)
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )

    def issue(
        self, public_key: ec.EllipticCurvePublicKey, identity: str, issuer: str
    ) -> x509.Certificate:
        """A leaf for ``identity`` (an e-mail, else a URI) logged in through ``issuer``."""
        san: x509.GeneralName = (
            x509.RFC822Name(identity)
            if "@" in identity and "/" not in identity
            else x509.UniformResourceIdentifier(identity)
        )
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.subject)
            .public_key(public_key)
            .serial_number(int.from_bytes(secrets.token_bytes(16), "big") >> 1 or 1)
            .not_valid_before(now - datetime.timedelta(seconds=5))
            .not_valid_after(now + CERT_LIFETIME)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
            .add_extension(x509.SubjectAlternativeName([san]), critical=True)
            .add_extension(
                x509.UnrecognizedExtension(ISSUER_V1_OID, issuer.encode()), critical=False
            )
            .add_extension(
                x509.UnrecognizedExtension(ISSUER_V2_OID, der.utf8_string(issuer)), critical=False
            )
        )
        # The precertificate is the certificate without its SCT list: what the CT log signs.
        precert = builder.sign(self.key, hashes.SHA256())
        sct = self._sct(precert.tbs_certificate_bytes, now)
        sct_list = struct.pack("!H", len(sct)) + sct
        extension = der.octet_string(struct.pack("!H", len(sct_list)) + sct_list)
        leaf = builder.add_extension(
            x509.UnrecognizedExtension(SCT_LIST_OID, extension), critical=False
        ).sign(self.key, hashes.SHA256())
        assert leaf.tbs_precertificate_bytes == precert.tbs_certificate_bytes
        return leaf

    def _sct(self, tbs: bytes, when: datetime.datetime) -> bytes:
        """An RFC 6962 v1 SCT (precert entry) by the CT key, TLS-encoded."""
        timestamp = int(when.timestamp() * 1000)
        issuer_key_hash = key_id(self.key.public_key())
        signed_entry = issuer_key_hash + len(tbs).to_bytes(3, "big") + tbs
        signed = struct.pack("!BBQH", 0, 0, timestamp, 1) + signed_entry + struct.pack("!H", 0)
        signature = self.ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return (
            struct.pack("!B", 0)
            + key_id(self.ct_key.public_key())
            + struct.pack("!QH", timestamp, 0)
            + struct.pack("!BBH", 4, 3, len(signature))  # sha256, ecdsa
            + signature
        )
