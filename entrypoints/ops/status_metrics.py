"""The docs/http-api.md §10 chain gauges, set from the chain's status at each scrape, so
/metrics, `club status` and /ops/status read the same numbers."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from typing import Any

import structlog

from adapters.metrics import (
    CONSUMER_LAG,
    CONSUMER_LAG_SECONDS,
    DELIVERY_ETA,
    OUTBOX,
    OUTBOX_OLDEST_AGE,
    PROJECTION_POSITION,
    QUEUE_LENGTH,
    QUEUE_OLDEST_AGE,
    RELAY_LAG,
    ROLES_ALIVE,
    SAGA_DEADLINES,
)
from entrypoints.config.catalogue import ROLES, WORK_CLASSES
from entrypoints.ops.access import config_of
from entrypoints.ops.chain_status import ChainStatus, read_chain
from entrypoints.ops.reads import app_reads
from entrypoints.ops.work_metrics import set_work_gauges

log = structlog.get_logger()

SCRAPE_BUDGET_S = 2.0


async def refresh_chain_gauges(state: Any) -> None:
    """Read at scrape time (`state`: the API app's); a broker or database that
    does not answer in time leaves the last values (and a warning), never a
    failed scrape."""
    nc: Any = getattr(state, "nats", None)
    if nc is None or not nc.is_connected:
        return
    config = config_of(state)
    try:
        status = await asyncio.wait_for(
            read_chain(
                app_reads(state, nc.jetstream()),
                promise_seconds=config.promise_seconds,
                configured_service_per_s=config.email_rate_per_s,
                detail=False,
            ),
            SCRAPE_BUDGET_S,
        )
    except Exception:  # any failure keeps the scrape answering
        log.warning("metrics.chain_unavailable", exc_info=True)
        return
    set_chain_gauges(status)


def set_chain_gauges(status: ChainStatus) -> None:
    outbox = status.outbox
    RELAY_LAG.set(outbox.unpublished)
    OUTBOX_OLDEST_AGE.set(outbox.oldest_age_seconds or 0.0)
    QUEUE_LENGTH.labels(queue=OUTBOX).set(outbox.unpublished)
    QUEUE_OLDEST_AGE.labels(queue=OUTBOX).set(outbox.oldest_age_seconds or 0.0)
    for hop in status.consumers:
        CONSUMER_LAG.labels(consumer=hop.consumer).set(hop.lag_events)
        CONSUMER_LAG_SECONDS.labels(consumer=hop.consumer).set(
            hop.oldest_age_seconds or 0.0
        )
        if hop.consumer in WORK_CLASSES:
            QUEUE_LENGTH.labels(queue=hop.consumer).set(hop.lag_events)
            QUEUE_OLDEST_AGE.labels(queue=hop.consumer).set(
                hop.oldest_age_seconds or 0.0
            )
    if status.saga_deadlines is not None:
        deadlines = status.saga_deadlines
        QUEUE_LENGTH.labels(queue=SAGA_DEADLINES).set(deadlines.overdue)
        QUEUE_OLDEST_AGE.labels(queue=SAGA_DEADLINES).set(
            deadlines.oldest_overdue_seconds or 0.0
        )
    for name, position in status.positions.items():
        PROJECTION_POSITION.labels(projection=name).set(position)
    delivery = status.delivery
    eta = delivery.eta_seconds if delivery.drains else math.inf
    DELIVERY_ETA.labels(queue=delivery.queue).set(eta)
    set_roles_alive(status)
    set_work_gauges(status.work, status.at)


def set_roles_alive(status: ChainStatus) -> None:
    """Every role `club up` runs has its gauge, 0 while none of it beats."""
    alive = Counter((beat.kind, beat.name) for beat in status.roles)
    for role in ROLES:
        if role.kind != "sandbox":
            alive.setdefault((role.kind, role.name), 0)
    for (kind, name), count in alive.items():
        ROLES_ALIVE.labels(kind=kind, name=name).set(count)
