"""Who calls: a route that asks for `CallerDep` is answered only for a verified
bearer token (contract §4.1); the token's rights are checked by the route with
`application.identity`'s rules.

The scheme is declared to OpenAPI (`/docs` shows an Authorize button). A missing,
malformed, expired or badly signed token is a 401 with `WWW-Authenticate: Bearer
error="invalid_token"`; an identity provider whose keys cannot be fetched is a 503,
not the caller's fault.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from adapters.identity.tokens import InvalidTokenError, IssuerKeys, TokenVerifier
from application.identity import Caller
from entrypoints.http.rate_limit import CallerLimit

_BEARER = HTTPBearer(
    auto_error=False,  # our 401 is a problem document with the header RFC 6750 names
    bearerFormat="JWT",
    description="A JWT from Club's identity provider (`club token` in development)",
)


async def _caller(
    request: Request,
    given: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
) -> Caller:
    return await _caller_of(request, None if given is None else given.credentials)


async def _caller_of(request: Request, token: str | None) -> Caller:
    limit: CallerLimit | None = getattr(request.app.state, "rate_limit", None)
    try:
        if token is None:
            raise InvalidTokenError("send Authorization: Bearer <token>")
        caller = await _verified(request.app.state.verifier, token)
    except InvalidTokenError:
        if limit is not None:  # a flood of bad tokens is an address's to pay for
            limit.spend(f"address:{request.client.host if request.client else ''}")
        raise
    if limit is not None:
        limit.spend(f"caller:{caller.sub}")
    request.state.caller = caller  # the Idempotency-Key's owner, the logs' caller
    return caller


async def verified_caller(request: Request) -> Caller:
    """`CallerDep` outside FastAPI's dependency solving (a lean route's)."""
    return await _caller_of(request, bearer_token(request.headers.get("authorization")))


def bearer_token(authorization: str | None) -> str | None:
    """The token `_BEARER` would take from this header (its rules, without the
    model it builds for each request), or None."""
    scheme, credentials = get_authorization_scheme_param(authorization)
    if not (authorization and scheme and credentials) or scheme.lower() != "bearer":
        return None
    return credentials


async def _verified(verifier: TokenVerifier, token: str) -> Caller:
    if isinstance(verifier.keys, IssuerKeys):  # may fetch the issuer's keys
        return await asyncio.to_thread(verifier.caller, token)
    return verifier.caller(token)  # a secret: microseconds of CPU, no I/O


CallerDep = Annotated[Caller, Depends(_caller)]
