"""The API process's metrics, read at scrape time: the chain's gauges and the
DLQ's. Served on the metrics port (CLUB_METRICS_HOST/PORT, loopback by default),
never on the public API port: each scrape costs a whole-chain read."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from adapters.metrics import DLQ_EXPIRING, DLQ_MESSAGES, DLQ_OLDEST_AGE
from entrypoints.ops.reads import app_reads
from entrypoints.ops.status_metrics import refresh_chain_gauges

log = structlog.get_logger()


async def refresh_api_metrics(state: Any) -> None:
    """`state`: the API app's (its NATS connection, container and settings)."""
    await _refresh_dlq_gauges(state)
    await refresh_chain_gauges(state)


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
    DLQ_EXPIRING.clear()
    for hop in hops:
        DLQ_MESSAGES.labels(consumer=hop.consumer).set(hop.messages)
        DLQ_OLDEST_AGE.labels(consumer=hop.consumer).set(hop.oldest_age_seconds)
        DLQ_EXPIRING.labels(consumer=hop.consumer).set(hop.expiring)
