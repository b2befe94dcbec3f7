"""`GET /metrics`: the API process's Prometheus text, with the chain's gauges
read at scrape time."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from adapters.metrics import DLQ_MESSAGES, DLQ_OLDEST_AGE
from entrypoints.ops.reads import app_reads
from entrypoints.ops.status_metrics import refresh_chain_gauges

log = structlog.get_logger()
router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    await _refresh_dlq_gauges(request.app.state)
    await refresh_chain_gauges(request)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


async def _refresh_dlq_gauges(state: Any) -> None:
    """Read at scrape time; a broker that does not answer leaves the last values."""
    nc: Any = getattr(state, "nats", None)
    if nc is None or not nc.is_connected:
        return
    try:
        reads = app_reads(state, nc.jetstream())
        hops = await asyncio.wait_for(reads.chain_lags.dlq_hops(), 2)
    except Exception:
        log.warning("metrics.dlq_unavailable")
        return
    DLQ_MESSAGES.clear()
    DLQ_OLDEST_AGE.clear()
    for hop in hops:
        DLQ_MESSAGES.labels(consumer=hop.consumer).set(hop.messages)
        DLQ_OLDEST_AGE.labels(consumer=hop.consumer).set(hop.oldest_age_seconds)
