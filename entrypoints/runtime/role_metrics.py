"""What each background role reads about its own hop at a scrape.

Each role reads only what its own credentials may: the relay the outbox (the
database), a projector or worker its own durable's lag (its broker user may ask
for that consumer's info, not read the stream's messages), the saga its deadlines.
The whole chain's view — every hop's oldest age, the DLQ, the delivery estimate —
is the API's /metrics (entrypoints/ops/status_metrics.py), whose user may read it all.
"""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext

from adapters.metrics import (
    CONSUMER_LAG,
    OUTBOX,
    OUTBOX_OLDEST_AGE,
    PROJECTION_POSITION,
    QUEUE_LENGTH,
    QUEUE_OLDEST_AGE,
    RELAY_LAG,
    RELAY_LEASE_HELD,
    SAGA_DEADLINES,
)
from adapters.nats.relay import Relay
from adapters.nats.streams import EVENTS_STREAM
from application.ports import ChainCounts
from entrypoints.config.container import Container
from entrypoints.runtime.console_wiring import chain_counts
from entrypoints.runtime.metrics_server import Refresh


def _database(container: Container) -> ChainCounts:
    return chain_counts(container)


def relay_refresh(container: Container, relay: Relay) -> Refresh:
    database = _database(container)

    async def refresh() -> None:
        RELAY_LEASE_HELD.set(1 if relay.epoch is not None else 0)
        outbox = await asyncio.to_thread(database.outbox)
        age = outbox.oldest_age_seconds or 0.0
        RELAY_LAG.set(outbox.unpublished)
        OUTBOX_OLDEST_AGE.set(age)
        QUEUE_LENGTH.labels(queue=OUTBOX).set(outbox.unpublished)
        QUEUE_OLDEST_AGE.labels(queue=OUTBOX).set(age)

    return refresh


def consumer_refresh(
    container: Container, js: JetStreamContext, durable: str, *, projection: bool
) -> Refresh:
    """A projector's lag and position; a worker's lag is its work class's queue."""
    database = _database(container)

    async def refresh() -> None:
        info = await js.consumer_info(EVENTS_STREAM, durable)
        lag = int(info.num_pending or 0) + int(info.num_ack_pending or 0)
        CONSUMER_LAG.labels(consumer=durable).set(lag)
        if projection:
            positions = await asyncio.to_thread(database.projection_positions)
            PROJECTION_POSITION.labels(projection=durable).set(
                positions.get(durable, 0)
            )
        else:
            QUEUE_LENGTH.labels(queue=durable).set(lag)

    return refresh


def saga_refresh(container: Container) -> Refresh:
    database = _database(container)

    async def refresh() -> None:
        deadlines = await asyncio.to_thread(database.saga_deadlines)
        if deadlines is None:
            return
        QUEUE_LENGTH.labels(queue=SAGA_DEADLINES).set(deadlines.overdue)
        QUEUE_OLDEST_AGE.labels(queue=SAGA_DEADLINES).set(
            deadlines.oldest_overdue_seconds or 0.0
        )

    return refresh
