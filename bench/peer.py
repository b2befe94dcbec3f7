"""The peer: the relay of PyPI's `nats-outbox` (0.1.0), the closest existing Python
outbox to JetStream, publishing the same envelopes on the same servers.

Its outbox table is filled with one row per envelope Club's relay publishes (same
subject, same body as JSON, `Nats-Msg-Id` = event id); its relay is then driven
tick after tick — its own drain loop without the idle sleep — with its largest
batch (1,000) until nothing is pending.
"""

from __future__ import annotations

import asyncio
import json
import time

from nats_outbox.core.models import OutboxEvent, create_tables, drop_tables
from nats_outbox.publishers.nats_publisher import NatsPublisher
from nats_outbox.relay.polling import PollingRelay
from nats_outbox.settings import OutboxSettings
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from adapters.nats.streams import EVENTS_STREAM, connect
from application.contracts.envelope import Envelope
from bench.relay import fresh_stream

INSERT_CHUNK = 5_000


def nats_outbox_rate(database_url: str, nats_url: str, envelopes: list[Envelope]):
    async_url = database_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    rows = [
        {
            "event_id": e.event_id,
            "subject": e.subject,
            "headers": {"Nats-Msg-Id": str(e.event_id)},
            "payload": json.loads(e.to_json()),
            "aggregate_id": str(e.aggregate_id),
            "aggregate_type": e.aggregate,
        }
        for e in envelopes
    ]

    async def one() -> float:
        engine = create_async_engine(async_url)
        await drop_tables(engine)
        await create_tables(engine)
        async with engine.begin() as conn:
            for i in range(0, len(rows), INSERT_CHUNK):
                await conn.execute(insert(OutboxEvent), rows[i : i + INSERT_CHUNK])
        nc = await connect(nats_url, name="bench-nats-outbox")
        js = nc.jetstream()
        await fresh_stream(js)
        settings = OutboxSettings(
            database_url=async_url, nats_url=nats_url, batch_size=1000
        )
        relay = PollingRelay(
            async_sessionmaker(engine, expire_on_commit=False),
            NatsPublisher(js),
            settings,
        )
        start = time.perf_counter()
        while await relay._tick():  # its drain loop, minus the sleep when idle
            pass
        elapsed = time.perf_counter() - start
        published = (await js.stream_info(EVENTS_STREAM)).state.messages
        await nc.close()
        await engine.dispose()
        assert published == len(rows), (published, len(rows))
        return published / elapsed

    return asyncio.run(one())
