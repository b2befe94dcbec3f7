"""Liveness, readiness (database and NATS) and Prometheus metrics."""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa
import structlog
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from adapters.metrics import DLQ_MESSAGES, DLQ_OLDEST_AGE
from adapters.nats.dlq_metrics import dlq_hops
from entrypoints.api_docs import problems
from entrypoints.bootstrap import Container
from entrypoints.problems import problem
from entrypoints.routes.deps import ContainerDep
from entrypoints.status_metrics import refresh_chain_gauges

log = structlog.get_logger()
router = APIRouter()


@router.get("/healthz", operation_id="healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", operation_id="readyz", responses=problems(503))
async def readyz(request: Request, container: ContainerDep) -> Response:
    checks = {
        "database": await asyncio.to_thread(_database_ready, container),
        "nats": await _nats_ready(getattr(request.app.state, "nats", None)),
    }
    if all(checks.values()):
        return JSONResponse({"status": "ready", "checks": checks})
    return problem(
        503, "not-ready", "Not ready", headers={"Retry-After": "1"}, checks=checks
    )


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    await _refresh_dlq_gauges(getattr(request.app.state, "nats", None))
    await refresh_chain_gauges(request)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


async def _refresh_dlq_gauges(nc: Any) -> None:
    """Read at scrape time; a broker that does not answer leaves the last values."""
    if nc is None or not nc.is_connected:
        return
    try:
        hops = await asyncio.wait_for(dlq_hops(nc.jetstream()), 2)
    except Exception:
        log.warning("metrics.dlq_unavailable")
        return
    DLQ_MESSAGES.clear()
    DLQ_OLDEST_AGE.clear()
    for hop in hops:
        DLQ_MESSAGES.labels(consumer=hop.consumer).set(hop.messages)
        DLQ_OLDEST_AGE.labels(consumer=hop.consumer).set(hop.oldest_age_seconds)


def _database_ready(container: Container) -> bool:
    try:
        with container.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError:
        return False
    return True


async def _nats_ready(nc: Any) -> bool:
    if nc is None or not nc.is_connected:
        return False
    try:
        await asyncio.wait_for(nc.jetstream().account_info(), 2)
    except Exception:  # any failure means "not ready", never a 500
        return False
    return True
