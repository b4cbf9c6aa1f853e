"""The timestamp authority of the test Sigstore instance: RFC 3161 over HTTP, as Sigstore's
timestamp-authority serves it (``POST /api/v1/timestamp``, ``application/timestamp-query`` in,
``application/timestamp-reply`` out).

What sigstore-python (through rfc3161-client and OpenSSL's PKCS #7 verification) checks and this
TSA therefore gets right: status granted; a SignedData whose encapsulated content is the DER
TSTInfo (content type id-ct-TSTInfo) with signed attributes content-type, message-digest and
the RFC 5816 signing-certificate-v2; exactly one SignerInfo naming the signing certificate by
issuer and serial; a signing certificate whose extended key usage is timeStamping alone and
critical, chained to the root in the trusted root and valid at ``genTime``; the request's
message imprint and nonce echoed; the certificate included when the request asks for it.
"""

from __future__ import annotations

import datetime
import hashlib
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.sigstore_instance import der

SIGNED_DATA = "1.2.840.113549.1.7.2"
TST_INFO = "1.2.840.113549.1.9.16.1.4"
CONTENT_TYPE = "1.2.840.113549.1.9.3"
MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
SIGNING_CERTIFICATE_V2 = "1.2.840.113549.1.9.16.2.47"
SHA256 = "2.16.840.1.101.3.4.2.1"
ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2"
POLICY = "1.3.6.1.4.1.57264.2"  # Sigstore's arc; the TSA's policy is not checked by clients
GRANTED = 0
REJECTION = 2


class TimestampRequestError(ValueError):
    """A body that is not an RFC 3161 TimeStampReq this TSA can answer."""


class TimestampAuthority:
    """A self-signed root and a timestamping leaf; :meth:`respond` answers a TimeStampReq."""

    def __init__(self, name: str = "relbot test tsa") -> None:
        now = datetime.datetime.now(datetime.UTC)
        self.not_before = now - datetime.timedelta(days=1)
        not_after = now + datetime.timedelta(days=30)
        self.root_key = ec.generate_private_key(ec.SECP256R1())
        self.key = ec.generate_private_key(ec.SECP256R1())
        root_name = _name(name + " root")
        self.root = (
            x509.CertificateBuilder()
            .subject_name(root_name)
            .issuer_name(root_name)
            .public_key(self.root_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.not_before)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(cert_sign=True), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.root_key.public_key()),
                critical=False,
            )
            .sign(self.root_key, hashes.SHA256())
        )
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(root_name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.not_before)
            .not_valid_after(not_after)
            .add_extension(_key_usage(cert_sign=False), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.root_key.public_key()),
                critical=False,
            )
            .sign(self.root_key, hashes.SHA256())
        )
        self.issued = 0
        self._lock = threading.Lock()

    @property
    def chain(self) -> list[x509.Certificate]:
        """Leaf first, as the trusted root lists a TSA's chain."""
        return [self.certificate, self.root]

    def respond(self, body: bytes, now: datetime.datetime | None = None) -> bytes:
        """The DER TimeStampResp to a DER TimeStampReq: granted, or a rejection (status 2, with
        why) for a body that is not one."""
        try:
            imprint, nonce, cert_req = _read_request(body)
        except TimestampRequestError as err:
            status = der.sequence(
                der.integer(REJECTION),
                der.sequence(der.utf8_string(str(err))),
            )
            return der.sequence(status)
        with self._lock:
            self.issued += 1
            serial = self.issued
        when = now or datetime.datetime.now(datetime.UTC)
        tst_info = der.sequence(
            der.integer(1),
            der.oid(POLICY),
            imprint,
            der.integer(serial),
            der.generalized_time(when),
            *([der.integer(nonce)] if nonce is not None else []),
        )
        return der.sequence(der.sequence(der.integer(GRANTED)), self._token(tst_info, cert_req))

    def _token(self, tst_info: bytes, include_certificate: bool) -> bytes:
        """The ContentInfo holding a SignedData over ``tst_info`` (CMS, RFC 5652)."""
        leaf_der = self.certificate.public_bytes(serialization.Encoding.DER)
        attributes = [
            der.sequence(der.oid(CONTENT_TYPE), der.set_of(der.oid(TST_INFO))),
            der.sequence(
                der.oid(MESSAGE_DIGEST),
                der.set_of(der.octet_string(hashlib.sha256(tst_info).digest())),
            ),
            der.sequence(
                der.oid(SIGNING_CERTIFICATE_V2),
                der.set_of(
                    der.sequence(  # SigningCertificateV2
                        der.sequence(  # certs
                            der.sequence(  # ESSCertIDv2 (SHA-256 by default)
                                der.octet_string(hashlib.sha256(leaf_der).digest())
                            )
                        )
                    )
                ),
            ),
        ]
        # The signature covers the attributes encoded as a SET; the SignerInfo carries them
        # under the implicit [0] tag.
        signed_attributes = der.set_of(*attributes)
        signature = self.key.sign(signed_attributes, ec.ECDSA(hashes.SHA256()))
        issuer_and_serial = der.sequence(
            self.root.subject.public_bytes(), der.integer(self.certificate.serial_number)
        )
        signer_info = der.sequence(
            der.integer(1),
            issuer_and_serial,
            der.sequence(der.oid(SHA256)),
            der.implicit(0, signed_attributes),
            der.sequence(der.oid(ECDSA_WITH_SHA256)),
            der.octet_string(signature),
        )
        signed_data = der.sequence(
            der.integer(3),
            der.set_of(der.sequence(der.oid(SHA256))),
            der.sequence(der.oid(TST_INFO), der.explicit(0, der.octet_string(tst_info))),
            *([der.implicit(0, der.set_of(leaf_der))] if include_certificate else []),
            der.set_of(signer_info),
        )
        return der.sequence(der.oid(SIGNED_DATA), der.explicit(0, signed_data))


def _read_request(body: bytes) -> tuple[bytes, int | None, bool]:
    """(message imprint as encoded, nonce, certReq) of a DER TimeStampReq."""
    try:
        request, rest = der.read(body)
        if request.tag != der.SEQUENCE or rest:
            raise TimestampRequestError("not a DER TimeStampReq")
        fields = der.children(request.content)
        if len(fields) < 2 or der.read_integer(fields[0]) != 1:
            raise TimestampRequestError("TimeStampReq version 1 expected")
        imprint = fields[1]
        algorithm, digest = der.children(imprint.content)
        digest_oid = der.children(algorithm.content)[0]
        if digest.tag != der.OCTET_STRING or digest_oid.tag != der.OID:
            raise TimestampRequestError("malformed messageImprint")
        nonce: int | None = None
        cert_req = False
        for field in fields[2:]:
            if field.tag == der.INTEGER:
                nonce = der.read_integer(field)
            elif field.tag == der.BOOLEAN:
                cert_req = field.content != b"\x00"
    except ValueError as err:
        raise TimestampRequestError(f"not a TimeStampReq: {err}") from err
    return imprint.encoded, nonce, cert_req


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "relbot tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
