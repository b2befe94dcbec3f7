"""Tokens from an identity provider: its JWKS fetched, cached, fetched again for a
new key, and the key — never the token — choosing the algorithm."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from adapters.identity.tokens import (
    InvalidTokenError,
    IssuerKeys,
    KeysUnavailableError,
    TokenVerifier,
)
from application.identity import Role

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def _jwk(private: Any, kid: str, algorithm: Any) -> dict[str, Any]:
    return json.loads(algorithm.to_jwk(private.public_key())) | {"kid": kid}


class Issuer:
    """A JWKS endpoint whose keys a test changes, counting its fetches."""

    def __init__(self) -> None:
        self.keys = [_jwk(RSA_KEY, "r1", RSAAlgorithm), _jwk(EC_KEY, "e1", ECAlgorithm)]
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                body = json.dumps({"keys": issuer.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    served = Issuer()
    yield served
    served.server.shutdown()
    served.server.server_close()


def _token(key: Any, kid: str, algorithm: str, **claims: Any) -> str:
    base = {"sub": "t-1", "roles": ["teacher"], "aud": "club"}
    claims = base | {"exp": int(time.time()) + 600} | claims
    return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": kid})


def test_rs256_and_es256_tokens_of_the_issuer_are_accepted(issuer: Issuer) -> None:
    verifier = TokenVerifier(keys=IssuerKeys(issuer.url))
    assert verifier.caller(_token(RSA_KEY, "r1", "RS256")).roles == {Role.TEACHER}
    assert verifier.caller(_token(EC_KEY, "e1", "ES256")).sub == "t-1"
    assert verifier.caller(_token(RSA_KEY, "r1", "RS256")).sub == "t-1"
    assert issuer.fetches == 1  # cached


def test_a_rotated_key_is_fetched_once_and_an_unknown_one_refused(
    issuer: Issuer,
) -> None:
    verifier = TokenVerifier(keys=IssuerKeys(issuer.url, refetch_every_s=0.3))
    verifier.caller(_token(RSA_KEY, "r1", "RS256"))
    time.sleep(0.4)  # past the refetch pause that follows a fetch
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    issuer.keys.append(_jwk(rotated, "r2", RSAAlgorithm))
    assert verifier.caller(_token(rotated, "r2", "RS256")).sub == "t-1"
    assert issuer.fetches == 2


def test_a_flood_of_unknown_keys_does_not_flood_the_issuer(issuer: Issuer) -> None:
    verifier = TokenVerifier(keys=IssuerKeys(issuer.url))  # 30 s between refetches
    verifier.caller(_token(RSA_KEY, "r1", "RS256"))
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for kid in ("x1", "x2", "x3", "x4", "x5"):
        with pytest.raises(InvalidTokenError, match="no key of the issuer"):
            verifier.caller(_token(stranger, kid, "RS256"))
    assert issuer.fetches == 1


def test_the_key_not_the_token_picks_the_algorithm(issuer: Issuer) -> None:
    verifier = TokenVerifier(keys=IssuerKeys(issuer.url))
    # r1 is an RS256 key: a token under its kid claiming ES256, or none
    for forged in (
        _token(EC_KEY, "r1", "ES256"),
        jwt.encode(
            {"sub": "x", "aud": "club", "exp": 9e9}, None, "none", {"kid": "r1"}
        ),
    ):
        with pytest.raises(InvalidTokenError):
            verifier.caller(forged)


def test_a_symmetric_key_in_the_jwks_is_refused(issuer: Issuer) -> None:
    secret = b"k" * 32
    issuer.keys.append(
        {"kty": "oct", "kid": "o1", "k": jwt.utils.base64url_encode(secret).decode()}
    )
    verifier = TokenVerifier(keys=IssuerKeys(issuer.url))
    with pytest.raises(InvalidTokenError, match="not an asymmetric"):
        verifier.caller(_token(secret, "o1", "HS256"))


def test_an_issuer_that_does_not_answer_is_not_the_callers_fault() -> None:
    verifier = TokenVerifier(keys=IssuerKeys("http://127.0.0.1:9/jwks", timeout=1))
    with pytest.raises(KeysUnavailableError):
        verifier.caller(_token(RSA_KEY, "r1", "RS256"))
