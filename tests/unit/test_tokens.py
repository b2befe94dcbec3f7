"""Bearer tokens: what a verified token says, and every way one is refused."""

from __future__ import annotations

import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from adapters.identity.tokens import (
    InvalidTokenError,
    SharedSecret,
    TokenVerifier,
    sign,
)
from application.identity import Caller, Role

pytestmark = pytest.mark.unit

SECRET = b"s" * 32
VERIFIER = TokenVerifier(keys=SharedSecret(SECRET))
NOW = time.time()
# Tokens built when the tests are collected must still be unexpired when they run,
# however long the suite before them takes.
LATER = int(NOW) + 365 * 86_400


def _token(**claims: object) -> str:
    base: dict[str, object] = {
        "sub": "ann",
        "roles": ["student"],
        "aud": "club",
        "exp": LATER,
    }
    return jwt.encode(base | claims, SECRET, algorithm="HS256")


def test_a_good_token_names_its_caller_and_roles() -> None:
    caller = VERIFIER.caller(sign(SECRET, sub="t-1", roles=["teacher"], ttl_s=60))
    assert caller == Caller(sub="t-1", roles=frozenset({Role.TEACHER}))


def test_unknown_roles_give_no_right() -> None:
    caller = VERIFIER.caller(_token(roles=["student", "superuser", "ADMIN"]))
    assert caller.roles == frozenset({Role.STUDENT})


def _unsigned() -> str:
    return jwt.encode(
        {"sub": "ann", "roles": ["admin"], "aud": "club", "exp": LATER},
        None,
        algorithm="none",
    )


def _rs256_key_as_hmac() -> str:
    """Algorithm confusion: an RS256 header, 'signed' with a public key as an HMAC
    secret — refused since the key, not the token, picks the algorithm."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(
        {"sub": "ann", "roles": ["admin"], "aud": "club", "exp": LATER},
        private,
        algorithm="RS256",
    )


@pytest.mark.parametrize(
    ("token", "said"),
    [
        ("", "no bearer token"),
        ("x" * 9000, "too long"),
        ("not.a.jwt", "malformed"),
        ("a\x00b.c.d", "malformed"),
        (_unsigned(), "malformed or badly signed"),
        (_rs256_key_as_hmac(), "malformed or badly signed"),
        (jwt.encode({"sub": "a", "aud": "club", "exp": 9e9}, b"o" * 32), "badly"),
        (_token(exp=int(NOW) - 120), "expired"),
        (_token(nbf=LATER - 60), "not valid yet"),
        (_token(aud="another-api"), "not for club"),
        (_token(exp=None), "exp"),
        (jwt.encode({"sub": "ann", "aud": "club"}, SECRET), "has no exp"),
        (jwt.encode({"aud": "club", "exp": LATER}, SECRET), "has no sub"),
        (_token(sub=""), "sub"),
        (_token(sub=7), "malformed"),
        (_token(roles="admin"), "roles are not a list"),
        (
            jwt.encode({"sub": "a", "aud": "club", "exp": 9e9}, SECRET * 2, "HS512"),
            "ly",
        ),
    ],
)
def test_a_bad_token_is_refused_saying_which_check(token: str, said: str) -> None:
    with pytest.raises(InvalidTokenError) as refused:
        VERIFIER.caller(token)
    assert said in str(refused.value)


def test_a_token_from_another_issuer_is_refused_when_one_is_set() -> None:
    verifier = TokenVerifier(keys=SharedSecret(SECRET), issuer="https://id.club")
    with pytest.raises(InvalidTokenError, match="issuer"):
        verifier.caller(_token(iss="https://evil.example"))
    with pytest.raises(InvalidTokenError):
        verifier.caller(_token())  # none at all
    assert verifier.caller(_token(iss="https://id.club")).sub == "ann"


def test_a_clock_a_little_behind_still_agrees() -> None:
    assert VERIFIER.caller(_token(exp=int(time.time()) - 10)).sub == "ann"


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        SharedSecret(b"short")
    with pytest.raises(ValueError, match="32 bytes"):
        sign(b"short", sub="a", roles=[], ttl_s=60)


def test_the_signed_token_carries_what_a_provider_issues() -> None:
    token = sign(SECRET, sub="ann", roles=["student"], ttl_s=3600, issuer="i", now=NOW)
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="club")
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["nbf"] == claims["iat"]
    assert claims["iss"] == "i"
    assert jwt.get_unverified_header(token)["alg"] == "HS256"


def test_the_secret_is_checked_once_not_for_every_token(monkeypatch) -> None:
    """PyJWT's check that an HS256 secret is no public key parses it each time."""
    other = b"o" * 32
    tokens = [sign(other, sub=f"s-{n}", roles=["student"], ttl_s=60) for n in range(3)]
    checks: list[bytes] = []
    check = jwt.algorithms.HMACAlgorithm._is_der_key

    def counted(key: bytes) -> bool:
        checks.append(key)
        return check(key)

    monkeypatch.setattr(
        jwt.algorithms.HMACAlgorithm, "_is_der_key", staticmethod(counted)
    )
    verifier = TokenVerifier(keys=SharedSecret(other))
    assert [verifier.caller(t).sub for t in tokens] == ["s-0", "s-1", "s-2"]
    assert checks == [other]
    with pytest.raises(InvalidTokenError, match="badly signed"):
        verifier.caller(_token())  # signed with another secret
