"""The whole HTTP app a role serves: the public API with the operator's console."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI

from adapters.identity.tokens import TokenVerifier
from entrypoints.config.container import Container
from entrypoints.http.app import Beside, create_api
from entrypoints.http.deadline import DEFAULT_DEADLINE_S
from entrypoints.http.rate_limit import CallerLimit
from entrypoints.http.routes.purchases import DEFAULT_HOLD_SECONDS
from entrypoints.ops import page, review_page, routes, work_page
from entrypoints.ops.access import OpsConfig
from entrypoints.ops.metrics import refresh_api_metrics
from entrypoints.runtime.console_wiring import console_reads
from entrypoints.runtime.metrics_server import MetricsServer

CONSOLE_ROUTERS = (routes.router, page.router, work_page.router, review_page.router)


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
    metrics: MetricsServer | None = None,
    beat: Beside | None = None,
) -> FastAPI:
    """`ops`: the operator token and promise for /ops/* (None: from CLUB_* on first
    use); `metrics`: where the process's /metrics is served (None: nowhere; never
    on the public port); `beat`: the process's heartbeat while it serves (None:
    none); the rest as `create_api`."""
    beside: list[Beside] = [] if metrics is None else [_serving(metrics)]
    if beat is not None:
        beside.append(beat)
    return create_api(
        container,
        nats_url,
        verifier=verifier,
        rate_limit=rate_limit,
        allowed_hosts=allowed_hosts,
        also_running=beside,
        deadline_seconds=deadline_seconds,
        data_dir=data_dir,
        hold_seconds=hold_seconds,
        webhook_secret=webhook_secret,
        more_routers=CONSOLE_ROUTERS,
        state={"ops": ops, "console_reads": console_reads},
    )


def _serving(metrics: MetricsServer) -> Beside:
    @contextlib.asynccontextmanager
    async def serving(api: FastAPI) -> AsyncIterator[None]:
        metrics.refresh = functools.partial(refresh_api_metrics, api.state)
        await metrics.start()
        try:
            yield
        finally:
            await metrics.close()

    return serving
