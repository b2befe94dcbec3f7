"""Operator access to `/ops/*`: `Authorization: Bearer <CLUB_OPERATOR_TOKEN>`, or the
`/ops/` page's session cookie.

No Authorization header (or one that is not a bearer token): 401, with
`WWW-Authenticate: Bearer`. Any other bearer token: 403 — Club's students carry no
credential of their own, so whatever token a caller holds that is not the
operator's is a student's (or anybody's) and gives no access
(docs/decisions/2026-11-30-operator-access.md). The token is compared in constant
time (hmac.compare_digest), so timing tells nothing about how much of it matched.

A request may instead carry the session cookie the page's login set
(entrypoints/ops/session.py); a valid one is accepted whatever Authorization header
a proxy in front of the page added. Such a request changing anything
(POST, PUT, PATCH, DELETE) must also carry the session's CSRF token and no
cross-site Origin: a browser sends the cookie on its own, so the cookie alone
proves nothing about who asked (docs/decisions/2026-11-30-operator-page-session.md).
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs

import attrs
import structlog
from fastapi import Depends, HTTPException, Request

from application.console_reads import DEFAULT_KEY_LIFETIME_S
from application.retention import Retention
from entrypoints.config.settings import Settings, exports_dir
from entrypoints.ops.session import (
    COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    Session,
    cross_site,
    csrf_matches,
    valid_session,
)

log = structlog.get_logger()
BEARER = "bearer "
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FORM = "application/x-www-form-urlencoded"


@attrs.frozen(kw_only=True)
class OpsConfig:
    """What the /ops routes need from the settings."""

    operator_token: str
    promise_seconds: float
    email_rate_per_s: float  # the service rate assumed when none was measured
    retention: Retention | None = None  # shown beside each store's size
    exports_dir: Path | None = None  # its files counted with the stores
    public_url: str = ""  # where browsers reach the page (CLUB_PUBLIC_URL)
    # A replay holds back notifications first failed longer ago than this.
    email_key_lifetime_s: float = DEFAULT_KEY_LIFETIME_S

    @classmethod
    def from_settings(cls, settings: Settings) -> OpsConfig:
        return cls(
            operator_token=settings.operator_token,
            promise_seconds=settings.promise_seconds,
            email_rate_per_s=settings.email_rate_per_s,
            retention=settings.retention,
            exports_dir=exports_dir(settings.data_dir),
            public_url=settings.public_url,
            email_key_lifetime_s=settings.email_key_lifetime_s,
        )

    def chain_options(self) -> dict[str, Any]:
        """`read_chain`'s keywords, so /ops/status, the page and `club status`
        read the same view."""
        return {
            "promise_seconds": self.promise_seconds,
            "configured_service_per_s": self.email_rate_per_s,
            "retention": self.retention,
            "exports_dir": self.exports_dir,
        }


def ops_config(request: Request) -> OpsConfig:
    return config_of(request.app.state)


def config_of(state: Any) -> OpsConfig:
    """The app's, as `create_app(ops=...)` was given; else read once from CLUB_*
    (what `club up` hands the API: the token it printed)."""
    config: OpsConfig | None = getattr(state, "ops", None)
    if config is None:
        config = OpsConfig.from_settings(Settings.from_env())
        state.ops = config
    return config


OpsConfigDep = Annotated[OpsConfig, Depends(ops_config)]


async def require_operator(request: Request, config: OpsConfigDep) -> None:
    # A valid session wins over any Authorization header: a proxy in front of the
    # page (basic auth, an identity-aware proxy) adds one of its own.
    session = valid_session(request.cookies.get(COOKIE), config.operator_token)
    if session is not None:
        await _refuse_cross_site(request, config, session)
        request.state.ops_session = session
        return
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


async def _refuse_cross_site(
    request: Request, config: OpsConfig, session: Session
) -> None:
    if request.method in SAFE_METHODS:
        return
    if cross_site(request.headers.get("origin"), own_origin(request, config)):
        log.warning("ops.cross_site_refused", path=request.url.path)
        raise HTTPException(
            status_code=403, detail="a cross-site request to /ops is refused"
        )
    offered = request.headers.get(CSRF_HEADER) or await _form_field(request, CSRF_FIELD)
    if not csrf_matches(offered, config.operator_token, session):
        log.warning("ops.csrf_refused", path=request.url.path)
        raise HTTPException(
            status_code=403,
            detail="the page's form token (CSRF) is missing or wrong: "
            "reload /ops/ and try again",
        )


def own_origin(request: Request, config: OpsConfig) -> str:
    """The page's own origin: the configured public one (behind a proxy the Host
    header names the proxy's upstream), else the Host this request was sent to."""
    return config.public_url or request.headers.get("host", "")


def secure_cookie(request: Request, config: OpsConfig) -> bool:
    """Secure whenever the browser speaks https, even if the proxy speaks http."""
    return (config.public_url or str(request.url)).startswith("https://")


async def _form_field(request: Request, name: str) -> str:
    """One field of a url-encoded form body (the body is cached for the route)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != FORM:
        return ""
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    return fields.get(name, [""])[0]
