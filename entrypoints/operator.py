"""Operator access to `/ops/*`: `Authorization: Bearer <CLUB_OPERATOR_TOKEN>`.

No Authorization header (or one that is not a bearer token): 401, with
`WWW-Authenticate: Bearer`. Any other bearer token: 403 — Club's students carry no
credential of their own, so whatever token a caller holds that is not the
operator's is a student's (or anybody's) and gives no access
(docs/decisions/2026-11-30-operator-access.md). The token is compared in constant
time (hmac.compare_digest), so timing tells nothing about how much of it matched.
"""

from __future__ import annotations

import hmac
from typing import Annotated

import attrs
import structlog
from fastapi import Depends, HTTPException, Request

from entrypoints.settings import Settings

log = structlog.get_logger()
BEARER = "bearer "


@attrs.frozen(kw_only=True)
class OpsConfig:
    """What the /ops routes need from the settings."""

    operator_token: str
    promise_seconds: float
    email_rate_per_s: float  # the service rate assumed when none was measured

    @classmethod
    def from_settings(cls, settings: Settings) -> OpsConfig:
        return cls(
            operator_token=settings.operator_token,
            promise_seconds=settings.promise_seconds,
            email_rate_per_s=settings.email_rate_per_s,
        )


def ops_config(request: Request) -> OpsConfig:
    """The app's, as `create_app(ops=...)` was given; else read once from CLUB_*
    (what `club up` hands the API: the token it printed)."""
    config: OpsConfig | None = getattr(request.app.state, "ops", None)
    if config is None:
        config = OpsConfig.from_settings(Settings.from_env())
        request.app.state.ops = config
    return config


OpsConfigDep = Annotated[OpsConfig, Depends(ops_config)]


def require_operator(request: Request, config: OpsConfigDep) -> None:
    header = request.headers.get("authorization", "")
    if not header.lower().startswith(BEARER) or not header[len(BEARER) :].strip():
        raise HTTPException(
            status_code=401,
            detail="send Authorization: Bearer <CLUB_OPERATOR_TOKEN> "
            "(`club up` prints the token)",
            headers={"WWW-Authenticate": 'Bearer realm="club-ops"'},
        )
    offered = header[len(BEARER) :].strip().encode()
    if not hmac.compare_digest(offered, config.operator_token.encode()):
        log.warning("ops.forbidden", path=request.url.path)
        raise HTTPException(
            status_code=403,
            detail="this bearer token is not the operator token (CLUB_OPERATOR_TOKEN)",
        )
