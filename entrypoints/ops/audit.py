"""`club audit`: every published event up to the relay's position reached each consumer.

For each consumer, an event counts as accounted for when it has an inbox row (applied or
recognised) or a dead letter in CLUB_DLQ. Anything else is a hole: an event the broker
lost before the consumer saw it. `club relay rewind --to N` republishes from N.
Events from before a consumer's inbox horizon (retention trimmed their rows:
`adapters/postgres/retention.py`) cannot be checked that way and are not holes.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import sqlalchemy as sa
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from adapters.nats.streams import DLQ_STREAM
from adapters.postgres.inbox import horizon
from adapters.postgres.lease import RELAY_LEASE, RelayLease
from adapters.postgres.tables import inbox
from application.contracts.mapping import published_envelope
from entrypoints.config.catalogue import PROJECTIONS
from entrypoints.config.container import Container


@attrs.frozen
class Hole:
    consumer: str
    notification_id: int
    event_id: str
    type: str


def published_up_to_position(
    container: Container,
) -> list[tuple[int, str, str, datetime]]:
    """(notification id, event id, type, occurred at) of every published event up to
    the position."""
    position = RelayLease(
        container.engine, name=RELAY_LEASE, owner="audit", ttl=1
    ).position()
    app = container.app
    found = []
    start = 0
    while start < position:
        batch = app.recorder.select_notifications(
            start=start, limit=1000, stop=position, inclusive_of_start=False
        )
        if not batch:
            break
        for notification in batch:
            envelope = published_envelope(app.mapper, notification)
            if envelope is not None:
                occurred = envelope.occurred_at
                if occurred.tzinfo is None:  # a stored time is UTC
                    occurred = occurred.replace(tzinfo=UTC)
                found.append(
                    (notification.id, str(envelope.event_id), envelope.type, occurred)
                )
        start = batch[-1].id
    return found


async def dead_lettered(js: JetStreamContext, consumer: str) -> set[str]:
    """Original event ids of a consumer's dead letters (read without consuming)."""
    try:
        sub = await js.subscribe(
            f"club.dlq.{consumer}",
            stream=DLQ_STREAM,
            ordered_consumer=True,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL),
        )
    except NotFoundError:  # no stream yet: no dead letters
        return set()
    info = await sub.consumer_info()
    # A push consumer starts delivering at once: what reached our buffer before
    # the info was taken counts as delivered, not pending. Both are to be read.
    delivered = info.delivered.consumer_seq if info.delivered else 0
    ids: set[str] = set()
    for _ in range((info.num_pending or 0) + (delivered or 0)):
        msg = await sub.next_msg(timeout=5)
        ids.add((msg.headers or {}).get("Club-Original-Msg-Id", ""))
    await sub.unsubscribe()
    return ids


async def find_holes(container: Container, js: JetStreamContext) -> list[Hole]:
    published = published_up_to_position(container)
    holes = []
    for consumer in PROJECTIONS:
        with container.engine.connect() as conn:
            applied = {
                str(event_id)
                for event_id in conn.execute(
                    sa.select(inbox.c.event_id).where(inbox.c.consumer == consumer)
                ).scalars()
            }
            trimmed_before = horizon(conn, consumer)
        dead = await dead_lettered(js, consumer)
        holes += [
            Hole(consumer, nid, event_id, kind)
            for nid, event_id, kind, occurred in published
            if event_id not in applied
            and event_id not in dead
            and (trimmed_before is None or occurred >= trimmed_before)
        ]
    return holes
