"""The pure part of Sigstore's out-of-band login: the PKCE pair and which endpoints may carry a
login."""

from __future__ import annotations

import base64

import pytest

from bot.domain.login import endpoint_problem, new_pkce


def test_the_pkce_pair_is_rfc_7636s_example() -> None:
    # RFC 7636, appendix B.
    verifier_bytes = bytes(
        [116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186,
         22, 212, 37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121]
    )  # fmt: skip

    pkce = new_pkce(verifier_bytes, bytes(16))

    assert pkce.verifier == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_the_state_is_its_random_bytes_in_unpadded_base64url() -> None:
    state_bytes = bytes(17) + b"\x17"  # encodes to a last character "X"

    state = new_pkce(bytes(32), state_bytes).state

    assert state == "AAAAAAAAAAAAAAAAAAAAAAAX"
    assert base64.urlsafe_b64decode(state) == state_bytes


def test_too_few_random_bytes_are_refused() -> None:
    with pytest.raises(ValueError) as refused:
        new_pkce(bytes(31), bytes(16))

    assert str(refused.value).startswith("a login needs at least 32 random bytes")
    assert str(refused.value).endswith("16 for state")


def test_an_unparsable_endpoint_is_not_a_url() -> None:
    assert endpoint_problem("https://[::1/auth") == "is not a URL"


@pytest.mark.parametrize(
    "url", ["https://bot@oauth2.example/auth", "https://:secret@oauth2.example/auth"]
)
def test_an_endpoint_with_a_user_or_a_password_carries_credentials(url: str) -> None:
    assert endpoint_problem(url) == "carries credentials"
