"""The whole HTTP app a role serves: the public API with the operator's console."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from adapters.identity.tokens import TokenVerifier
from entrypoints.config.container import Container
from entrypoints.http.app import create_api
from entrypoints.http.deadline import DEFAULT_DEADLINE_S
from entrypoints.http.rate_limit import CallerLimit
from entrypoints.http.routes.purchases import DEFAULT_HOLD_SECONDS
from entrypoints.ops import metrics, page, routes
from entrypoints.ops.access import OpsConfig
from entrypoints.runtime.console_wiring import console_reads

CONSOLE_ROUTERS = (routes.router, page.router, metrics.router)


def create_app(
    container: Container,
    nats_url: str | None = None,
    *,
    deadline_seconds: float = DEFAULT_DEADLINE_S,
    data_dir: Path | None = None,
    hold_seconds: int = DEFAULT_HOLD_SECONDS,
    webhook_secret: str = "",
    ops: OpsConfig | None = None,
    verifier: TokenVerifier,
    rate_limit: CallerLimit | None = None,
    allowed_hosts: frozenset[str] | None = None,
) -> FastAPI:
    """`ops`: the operator token and promise for /ops/* (None: from CLUB_* on first
    use); the rest as `create_api`."""
    return create_api(
        container,
        nats_url,
        verifier=verifier,
        rate_limit=rate_limit,
        allowed_hosts=allowed_hosts,
        deadline_seconds=deadline_seconds,
        data_dir=data_dir,
        hold_seconds=hold_seconds,
        webhook_secret=webhook_secret,
        more_routers=CONSOLE_ROUTERS,
        state={"ops": ops, "console_reads": console_reads},
    )
