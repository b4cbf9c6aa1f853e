"""Just enough DER (X.690) for the test Sigstore instance: the certificate extensions the CA
writes and the RFC 3161 messages the timestamp authority reads and writes, which neither
``cryptography`` nor ``rfc3161-client`` builds (the one issues no timestamp tokens, the other
only requests them)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

SEQUENCE = 0x30
SET = 0x31
INTEGER = 0x02
OCTET_STRING = 0x04
OID = 0x06
BOOLEAN = 0x01
UTF8_STRING = 0x0C
GENERALIZED_TIME = 0x18


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def tlv(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + _length(len(content)) + content


def sequence(*items: bytes) -> bytes:
    return tlv(SEQUENCE, b"".join(items))


def set_of(*items: bytes) -> bytes:
    """A DER SET OF: its elements sorted by their encodings."""
    return tlv(SET, b"".join(sorted(items)))


def integer(value: int) -> bytes:
    size = value.bit_length() // 8 + 1  # room for the sign bit
    return tlv(INTEGER, value.to_bytes(size, "big", signed=True))


def octet_string(data: bytes) -> bytes:
    return tlv(OCTET_STRING, data)


def utf8_string(text: str) -> bytes:
    return tlv(UTF8_STRING, text.encode())


def oid(dotted: str) -> bytes:
    first, second, *rest = (int(arc) for arc in dotted.split("."))
    body = bytearray()
    for arc in (first * 40 + second, *rest):
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        body += bytes(reversed(chunk))
    return tlv(OID, bytes(body))


def generalized_time(when: datetime.datetime) -> bytes:
    """UTC, to the millisecond, without trailing zeros (as DER wants fractions)."""
    when = when.astimezone(datetime.UTC)
    text = when.strftime("%Y%m%d%H%M%S")
    millis = when.microsecond // 1000
    if millis:
        text += f".{millis:03d}".rstrip("0")
    return tlv(GENERALIZED_TIME, (text + "Z").encode())


def explicit(number: int, content: bytes) -> bytes:
    """A context-specific, constructed ``[number]`` tag around ``content``."""
    return tlv(0xA0 | number, content)


def implicit(number: int, encoded: bytes) -> bytes:
    """A constructed element re-tagged ``[number] IMPLICIT`` (its content kept)."""
    return bytes([0xA0 | number]) + encoded[1:]


@dataclass(frozen=True)
class Element:
    """One TLV read back: its tag, its content, and the whole encoding."""

    tag: int
    content: bytes
    encoded: bytes


def read(data: bytes) -> tuple[Element, bytes]:
    """The first element of ``data`` and what follows it; ValueError if it is cut short."""
    if len(data) < 2:
        raise ValueError("truncated DER")
    tag, first = data[0], data[1]
    if tag & 0x1F == 0x1F:
        raise ValueError("multi-byte DER tags are not expected here")
    offset = 2
    if first < 0x80:
        size = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4:
            raise ValueError("unsupported DER length")
        size = int.from_bytes(data[2 : 2 + count], "big")
        offset += count
    end = offset + size
    if end > len(data):
        raise ValueError("truncated DER")
    return Element(tag, data[offset:end], data[:end]), data[end:]


def children(content: bytes) -> list[Element]:
    """The elements one after another in a constructed element's content."""
    found = []
    while content:
        element, content = read(content)
        found.append(element)
    return found


def read_integer(element: Element) -> int:
    if element.tag != INTEGER:
        raise ValueError("expected an INTEGER")
    return int.from_bytes(element.content, "big", signed=True)
