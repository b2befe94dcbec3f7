"""The relay against a real PostgreSQL event store and a real JetStream."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from nats.js.errors import NoStreamResponseError

from adapters.nats.streams import EVENTS_STREAM, ensure_streams
from adapters.postgres.tables import relay_leases
from tests.integration.helpers import (
    lesson_with_enrollments,
    make_relay,
    published,
    relay_all,
    run,
    stream_messages,
    with_js,
)


def test_stream_holds_one_message_per_event_with_contract_headers(
    container, migrated
) -> None:
    database_url, nats_url = migrated
    lesson_with_enrollments(container, 3)

    async def body(js, nc):
        await relay_all(make_relay(container, nc, database_url))
        return await stream_messages(js)

    messages = run(with_js(nats_url, body))
    expected = published(container)
    assert len(messages) == len(expected) == 4
    for msg, envelope in zip(messages, expected, strict=True):
        assert msg.subject == envelope.subject
        assert msg.headers["Nats-Msg-Id"] == str(envelope.event_id)
        assert msg.headers["Club-Event-Type"] == envelope.type
        assert msg.headers["Club-Schema-Version"] == str(envelope.schema_version)
        body = json.loads(msg.data)
        assert body["event_id"] == str(envelope.event_id)
        assert body["aggregate_version"] == envelope.aggregate_version
        assert body["data"] == envelope.data


def test_republishing_after_a_lost_position_adds_no_copy(container, migrated) -> None:
    database_url, nats_url = migrated
    lesson_with_enrollments(container, 2)

    async def body(js, nc):
        first = make_relay(container, nc, database_url)
        await relay_all(first)
        before = len(await stream_messages(js))
        first.lease.rewind(0)  # as if it died before saving (or an operator rewound)
        second = make_relay(container, nc, database_url)
        await relay_all(second)
        return before, len(await stream_messages(js)), second.position

    before, after, republished_to = run(with_js(nats_url, body))
    assert republished_to == container.app.recorder.max_notification_id()
    assert before == after == len(published(container))


def test_relay_passes_over_gaps_in_notification_ids(container, migrated) -> None:
    database_url, nats_url = migrated
    with container.engine.begin() as conn:  # a failed insert uses ids up
        conn.execute(sa.text("SELECT nextval('club_events_notification_id_seq')"))
        conn.execute(sa.text("SELECT nextval('club_events_notification_id_seq')"))
    lesson_with_enrollments(container, 1)

    async def body(js, nc):
        relay = make_relay(container, nc, database_url)
        await relay_all(relay)
        return relay.position, await stream_messages(js)

    position, messages = run(with_js(nats_url, body))
    assert position == container.app.recorder.max_notification_id()
    assert len(messages) == len(published(container))


def test_position_stays_put_when_the_broker_refuses(container, migrated) -> None:
    database_url, nats_url = migrated

    async def body(js, nc):
        relay = make_relay(container, nc, database_url, puback_timeout=2)
        await relay_all(relay)
        start = relay.position
        lesson_with_enrollments(container, 1)
        await js.delete_stream(EVENTS_STREAM)
        with pytest.raises(NoStreamResponseError):
            await relay.relay_once()
        stuck = relay.position
        await ensure_streams(js)
        await relay_all(relay)
        return start, stuck, relay.position

    start, stuck, end = run(with_js(nats_url, body))
    assert stuck == start
    assert end == container.app.recorder.max_notification_id()
    with container.engine.connect() as conn:
        assert conn.execute(sa.select(relay_leases.c.position)).scalar_one() == end
