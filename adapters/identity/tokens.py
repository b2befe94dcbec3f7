"""Bearer JWTs (contract §4.1), verified with PyJWT.

The key decides the algorithm, never the token: an HS256 secret admits HS256 only;
a JWKS key admits the asymmetric algorithm its JWK names (RS256, ES256, …), and a
symmetric key served in a JWKS is refused (its "secret" is public). `exp` is
required, `nbf` checked, `aud` must match and `iss` too when one is set, within a
small leeway for clocks. `sub` is the caller, `roles` (a JSON array) its rights.
"""

from __future__ import annotations

import binascii
import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs
import jwt
from jwt.algorithms import HMACAlgorithm
from jwt.api_jws import _BASE64URL_ALPHABET  # the decoder's own, kept in step
from jwt.utils import base64url_decode, base64url_encode

from application.identity import Caller, Role

MIN_SECRET_BYTES = 32  # HS256's key as long as its hash (RFC 7518 §3.2)
LEEWAY_S = 30  # clocks apart by up to this much still agree (§4.1: at most 60)
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
)
MAX_TOKEN_CHARS = 8192  # a header's worth; a longer one is not parsed


class InvalidTokenError(Exception):
    """Missing, malformed, expired or badly signed: 401. The message is safe to
    answer with: it names the check that failed, never the token."""


class Keys(Protocol):
    def key_for(self, token: str) -> tuple[Any, str]:
        """The verification key for `token`, and the one algorithm it admits."""


@attrs.frozen
class SharedSecret:
    secret: bytes

    def __attrs_post_init__(self) -> None:
        if len(self.secret) < MIN_SECRET_BYTES:
            msg = f"an HS256 secret needs at least {MIN_SECRET_BYTES} bytes"
            raise ValueError(msg)

    def key_for(self, token: str) -> tuple[Any, str]:
        return self.secret, "HS256"


class IssuerKeys:
    """The issuer's JWKS (Keycloak, Auth0, any OIDC provider): cached for five
    minutes, fetched again for an unknown `kid` (a rotated key) but at most once
    per `refetch_every_s`, so a flood of made-up kids cannot flood the issuer."""

    def __init__(
        self, jwks_url: str, *, timeout: float = 5.0, refetch_every_s: float = 30.0
    ) -> None:
        self._client = jwt.PyJWKClient(
            jwks_url,
            cache_keys=True,
            lifespan=300,
            timeout=timeout,
            cooldown_duration=refetch_every_s,
        )

    def key_for(self, token: str) -> tuple[Any, str]:
        try:
            signing = self._client.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as e:
            raise KeysUnavailableError(str(e)) from None
        except (jwt.PyJWKClientError, jwt.DecodeError, jwt.InvalidKeyError) as e:
            raise InvalidTokenError("no key of the issuer signed it") from e
        if signing.algorithm_name not in ASYMMETRIC:
            raise InvalidTokenError("the issuer's key is not an asymmetric one")
        return signing.key, signing.algorithm_name


class KeysUnavailableError(Exception):
    """The issuer's JWKS could not be fetched: the caller is not at fault (503)."""


class _SecretCheckedOnce(HMACAlgorithm):
    """HS256 whose secret PyJWT checks once, not for every token: its check tries
    to parse the secret as a PEM, SSH or DER public key, a certificate and a JWK
    each time (~3% of an enrollment's API CPU). The secret is the server's own
    (CLUB_AUTH_SECRET), never a token's: a key it has not checked yet is checked."""

    def __init__(self) -> None:
        super().__init__(HMACAlgorithm.SHA256)
        self._checked: bytes | None = None

    def prepare_key(self, key: str | bytes) -> bytes:
        checked = self._checked
        if checked is not None and key == checked:
            return checked
        self._checked = prepared = super().prepare_key(key)
        return prepared


def _decode_segment(segment: bytes, name: str) -> bytes:
    """PyJWS's `_decode_base64url_segment`, rule for rule, with its alphabet
    check done in C (`bytes.translate`) instead of a Python generator over every
    byte: that loop was ~40% of a token's verification. Pinned to PyJWT's own by
    tests/unit/test_token_segments.py."""
    stripped = segment.rstrip(b"=")
    padding = len(segment) - len(stripped)
    if padding > 2 or (padding and len(segment) % 4 != 0):  # noqa: PLR2004
        raise jwt.DecodeError(f"Invalid {name} padding")
    if len(stripped) % 4 == 1 or stripped.translate(None, _BASE64URL_ALPHABET):
        raise jwt.DecodeError(f"Invalid {name} padding")
    try:
        decoded = base64url_decode(stripped)
    except (TypeError, binascii.Error) as err:
        raise jwt.DecodeError(f"Invalid {name} padding") from err
    if base64url_encode(decoded) != stripped:  # one token, one spelling
        raise jwt.DecodeError(f"Invalid {name} padding")
    return decoded


# PyJWT's own decoder with HS256 swapped and its segments decoded as above (its
# `_jws`: no public way to pass either).
_JWT = jwt.PyJWT()
_JWT._jws.unregister_algorithm("HS256")
_JWT._jws.register_algorithm("HS256", _SecretCheckedOnce())
_JWT._jws._decode_base64url_segment = _decode_segment  # type: ignore[method-assign]


@attrs.frozen(kw_only=True)
class TokenVerifier:
    keys: Keys
    audience: str = "club"
    issuer: str | None = None

    def caller(self, token: str) -> Caller:
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise InvalidTokenError("no bearer token, or one too long")
        key, algorithm = self.keys.key_for(token)
        try:
            claims = _JWT.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "sub"], "verify_signature": True},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidTokenError("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidTokenError("the token is not valid yet (nbf)") from None
        except jwt.InvalidAudienceError:
            raise InvalidTokenError(f"the token is not for {self.audience}") from None
        except jwt.InvalidIssuerError:
            raise InvalidTokenError("the token's issuer is not trusted") from None
        except jwt.MissingRequiredClaimError as e:
            raise InvalidTokenError(f"the token has no {e.claim}") from None
        except jwt.InvalidTokenError:
            raise InvalidTokenError("the token is malformed or badly signed") from None
        return _caller(claims)


def _caller(claims: Mapping[str, Any]) -> Caller:
    sub, roles = claims.get("sub"), claims.get("roles", [])
    if not isinstance(sub, str) or not sub.strip() or len(sub) > 255:  # noqa: PLR2004
        raise InvalidTokenError("the token's sub is not a caller's id")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise InvalidTokenError("the token's roles are not a list of names")
    return Caller(sub=sub, roles=frozenset(_ROLES[r] for r in roles if r in _ROLES))


_ROLES = {role.value: role for role in Role}  # a name Club does not know is ignored


def sign(
    secret: bytes,
    *,
    sub: str,
    roles: Iterable[str],
    ttl_s: float,
    audience: str = "club",
    issuer: str | None = None,
    now: float | None = None,
) -> str:
    """A token as an identity provider would issue it (`club token`, tests)."""
    SharedSecret(secret)  # the same length rule as verification
    issued = int(time.time() if now is None else now)
    claims: dict[str, Any] = {
        "sub": sub,
        "roles": sorted(set(roles)),
        "aud": audience,
        "iat": issued,
        "nbf": issued,
        "exp": issued + int(ttl_s),
    }
    if issuer:
        claims["iss"] = issuer
    return jwt.encode(claims, secret, algorithm="HS256")
