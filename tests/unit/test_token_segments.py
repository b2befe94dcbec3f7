"""A token's segments are decoded exactly as PyJWT's own rules decode them."""

from __future__ import annotations

import base64

import jwt
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from jwt.api_jws import _BASE64URL_ALPHABET, PyJWS

from adapters.identity import tokens

ALPHABET = _BASE64URL_ALPHABET.decode()
# Mostly the alphabet, with the bytes a forged token would carry among them.
SEGMENTS = st.one_of(
    st.text(alphabet=ALPHABET + "=", max_size=80),
    st.text(alphabet=ALPHABET + "=!+/. \x00é", max_size=80),
    st.binary(max_size=60).map(lambda b: base64.urlsafe_b64encode(b).decode()),
    st.binary(max_size=60).map(
        lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
    ),
).map(lambda s: s.encode())


def outcome(decode: object, segment: bytes) -> tuple[str, object]:
    try:
        return "decoded", decode(segment, "payload")  # type: ignore[operator]
    except jwt.DecodeError as refused:
        return "refused", str(refused)


@given(SEGMENTS)
@example(b"")
@example(b"YQ")
@example(b"YQ==")
@example(b"YQ===")
@example(b"YR")  # a second spelling of "a"
@example(b"Y")
@example(b"YQ=a")
@example(b"!!!!")
def test_each_segment_is_decoded_or_refused_as_pyjwt_does(segment: bytes) -> None:
    ours = outcome(tokens._decode_segment, segment)
    assert ours == outcome(PyJWS._decode_base64url_segment, segment)


def test_the_verifier_decodes_with_it() -> None:
    assert tokens._JWT._jws._decode_base64url_segment is tokens._decode_segment


@pytest.mark.parametrize("junk", ["!", "+", "/", " ", "\x00"])
def test_a_token_with_junk_in_its_payload_is_refused(junk: str) -> None:
    secret = b"s" * 32
    token = tokens.sign(secret, sub="ann", roles=["student"], ttl_s=60)
    header, payload, signature = token.split(".")
    forged = f"{header}.{payload[:4]}{junk}{payload[5:]}.{signature}"
    verifier = tokens.TokenVerifier(keys=tokens.SharedSecret(secret))
    with pytest.raises(tokens.InvalidTokenError, match="malformed or badly signed"):
        verifier.caller(forged)
    assert verifier.caller(token).sub == "ann"
