"""Under `club up` the API reads the status as its own NATS user: it may read each
durable's oldest unacked event (for its age) but still publish nothing."""

from __future__ import annotations

import asyncio

import pytest

from adapters.nats.chain_lags import consumer_hops
from adapters.nats.streams import EVENTS_STREAM, connect, ensure_streams
from adapters.nats.worker import ensure_worker_consumer
from entrypoints.runtime.work_classes import NOTIFICATIONS, WORK_CLASSES

BODY = (
    b'{"event_id": "0", "type": "EnrollmentConfirmed", "schema_version": 2,'
    b' "occurred_at": "2026-11-30T10:00:00+00:00", "data": {}}'
)


async def _one_waiting_event(admin_url: str, relay_url: str) -> None:
    admin = await connect(admin_url, name="test-admin")
    relay = await connect(relay_url, name="test-relay")
    try:
        js = admin.jetstream()
        await ensure_streams(js)
        work = WORK_CLASSES[NOTIFICATIONS]
        await ensure_worker_consumer(js, work.name, work.subjects)
        await relay.jetstream().publish(
            "club.events.enrollment.EnrollmentConfirmed", BODY
        )
    finally:
        await admin.close()
        await relay.close()


async def _hops_as_api(api_url: str) -> list:
    nc = await connect(api_url, name="test-api")
    try:
        return await consumer_hops(nc.jetstream(), [NOTIFICATIONS])
    finally:
        await nc.close()


async def _api_publishes(api_url: str) -> None:
    nc = await connect(api_url, name="test-api")
    try:
        await nc.jetstream().publish("club.events.x", b"{}", timeout=1)
    finally:
        await nc.close()


def test_the_api_user_reads_the_oldest_unacked_events_age(guarded_nats) -> None:
    asyncio.run(
        _one_waiting_event(guarded_nats.url_for("admin"), guarded_nats.url_for("relay"))
    )
    [hop] = asyncio.run(_hops_as_api(guarded_nats.url_for("api")))
    assert hop.lag_events == 1
    assert hop.oldest_age_seconds is not None  # from the event's occurred_at
    assert hop.oldest_age_seconds > 60


def test_the_api_user_still_publishes_nothing(guarded_nats) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - the broker never answers
        asyncio.run(_api_publishes(guarded_nats.url_for("api")))

    async def count() -> int:
        nc = await connect(guarded_nats.url_for("admin"), name="test-count")
        try:
            return int((await nc.jetstream().stream_info(EVENTS_STREAM)).state.messages)
        finally:
            await nc.close()

    assert asyncio.run(count()) == 1
