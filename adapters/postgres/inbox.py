"""Apply a batch of deliveries exactly once per consumer: inbox + effect + position.

One call runs inside the caller's transaction: it claims an inbox row per event id,
applies the effect of each event seen for the first time, recognises redeliveries by
the same meaning digest (application/contracts/meaning.py), reports conflicts (same
id, other meaning), and moves the consumer's position. The NATS runner, projection
rebuilds and the property tests all go through here.

When a batch fails for a reason other than the connection, `apply_isolated` applies
it again one delivery per SAVEPOINT: the healthy ones commit, and the ones that fail
alone (poison events) are handed back with their error and leave no trace.

Retention trims old inbox rows (adapters/postgres/retention.py) after moving the
consumer's horizon past them. An event that occurred before the horizon and finds
no row is one whose row was trimmed — a relay rewind or a consumer reset replaying
from the start — so it is refused as already handled (counted as a duplicate,
logged), never applied again: a rebuild is how old events are applied afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from uuid import UUID

import attrs
import sqlalchemy as sa
import structlog
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import consumer_positions, inbox, inbox_horizons
from adapters.transient import TRANSIENT
from application.contracts.envelope import Envelope

log = structlog.get_logger()

# A projection's effect for a batch of first-seen events, in one statement or more.
Apply = Callable[[sa.Connection, Sequence[Envelope]], None]


@attrs.frozen
class Delivery:
    envelope: Envelope
    digest: bytes  # the event's meaning digest
    stream_seq: int
    # sha256 of the body as delivered: inbox rows written before meaning digests
    # hold it, and a redelivery of those must still be recognised.
    body_digest: bytes | None = None

    def matches(self, recorded: bytes) -> bool:
        return recorded in (self.digest, self.body_digest)


@attrs.define
class Applied:
    applied: int = 0
    duplicates: int = 0
    conflicts: list[int] = attrs.Factory(list)  # indexes into the batch
    # Of the duplicates, events from before the trimmed horizon (no row left).
    beyond_horizon: int = 0
    # (index into the batch, why it failed alone): no inbox row, no effect.
    poisoned: list[tuple[int, Exception]] = attrs.Factory(list)


def apply_batch(
    conn: sa.Connection,
    consumer: str,
    batch: Sequence[Delivery],
    apply: Apply,
    position: int = 0,
) -> Applied:
    consumer_lock(conn, consumer)
    outcome = _apply_locked(conn, consumer, batch, apply)
    if position:
        advance(conn, consumer, position)
    return outcome


def apply_isolated(
    conn: sa.Connection, consumer: str, batch: Sequence[Delivery], apply: Apply
) -> Applied:
    """Apply each delivery in a SAVEPOINT of its own, after the batch failed.

    A failure of the connection is raised (the whole transaction is lost anyway);
    any other failure rolls back that delivery alone and is reported as poisoned.
    The caller moves the position, knowing which deliveries it will retry.
    """
    outcome = Applied()
    consumer_lock(conn, consumer)
    for index, delivery in enumerate(batch):
        try:
            with conn.begin_nested():
                one = _apply_locked(conn, consumer, [delivery], apply)
        except TRANSIENT:
            raise
        except Exception as e:  # whatever the effect raised: this event is poison
            outcome.poisoned.append((index, e))
            continue
        outcome.applied += one.applied
        outcome.duplicates += one.duplicates
        outcome.beyond_horizon += one.beyond_horizon
        if one.conflicts:
            outcome.conflicts.append(index)
    return outcome


def _apply_locked(
    conn: sa.Connection,
    consumer: str,
    batch: Sequence[Delivery],
    apply: Apply,
) -> Applied:
    outcome = Applied()
    owners, recorded, trimmed_before = _claim(conn, consumer, batch)
    first_seen = []
    for index, delivery in enumerate(batch):
        event_id = delivery.envelope.event_id
        if owners.get(event_id) is delivery and _before(delivery, trimmed_before):
            _refuse_beyond_horizon(consumer, delivery)
            outcome.duplicates += 1
            outcome.beyond_horizon += 1
        elif owners.get(event_id) is delivery:
            first_seen.append(delivery.envelope)
        elif delivery.matches(recorded[event_id]):
            outcome.duplicates += 1  # a redelivery or a republish: no effect
        else:
            outcome.conflicts.append(index)
    if first_seen:
        apply(conn, first_seen)
        outcome.applied = len(first_seen)
    return outcome


def horizon(conn: sa.Connection, consumer: str) -> datetime | None:
    """Events that occurred before this may have lost their inbox rows."""
    return conn.execute(
        sa.select(inbox_horizons.c.occurred_before).where(
            inbox_horizons.c.consumer == consumer
        )
    ).scalar()


def _before(delivery: Delivery, trimmed_before: datetime | None) -> bool:
    if trimmed_before is None:
        return False
    occurred = delivery.envelope.occurred_at
    if occurred.tzinfo is None:  # a published time always has its offset
        occurred = occurred.replace(tzinfo=UTC)
    return occurred < trimmed_before


def _refuse_beyond_horizon(consumer: str, delivery: Delivery) -> None:
    """Its row was trimmed (or it first arrives later than the inbox keeps rows,
    which the status's outbox age would have shown for weeks): not applied twice."""
    log.warning(
        "consumer.beyond_inbox_horizon",
        consumer=consumer,
        event_id=str(delivery.envelope.event_id),
        stream_seq=delivery.stream_seq,
        occurred_at=delivery.envelope.occurred_at.isoformat(),
        fix="to apply old events afresh, `club projections rebuild`",
    )


def consumer_lock(conn: sa.Connection, consumer: str) -> None:
    """Serialise one consumer's transactions (and a rebuild's switch) with each
    other, so they never interleave their inbox, effect and position writes."""
    conn.execute(_CONSUMER_LOCK, {"key": f"club-consumer:{consumer}"})


# Statements built once: one built per call is a new object whose cache key
# SQLAlchemy computes afresh (for the relay lease's move, half its CPU).
_CONSUMER_LOCK = sa.select(
    sa.func.pg_advisory_xact_lock(sa.func.hashtext(sa.bindparam("key", type_=sa.Text)))
)


# One cached statement whatever the batch size: a multi-row VALUES would be compiled
# afresh for every batch (a quarter of a consumer's time, by py-spy).
_batch = (
    sa.func.unnest(
        sa.bindparam("event_ids", type_=pg.ARRAY(pg.UUID(as_uuid=True))),
        sa.bindparam("digests", type_=pg.ARRAY(sa.LargeBinary)),
        sa.bindparam("seqs", type_=pg.ARRAY(sa.BigInteger)),
    )
    .table_valued("event_id", "digest", "seq")
    .render_derived(name="batch")
)
_CLAIM = (
    pg.insert(inbox)
    .from_select(
        ["consumer", "event_id", "body_sha256", "stream_seq"],
        sa.select(
            sa.bindparam("consumer", type_=sa.Text),
            _batch.c.event_id,
            _batch.c.digest,
            _batch.c.seq,
        ),
    )
    .on_conflict_do_nothing()
    .returning(
        inbox.c.event_id,
        # The horizon in the same round trip: this statement follows the
        # consumer's lock, under which the horizon moves, so it reads it afresh.
        sa.select(inbox_horizons.c.occurred_before)
        .where(inbox_horizons.c.consumer == sa.bindparam("consumer", type_=sa.Text))
        .scalar_subquery(),
    )
)


def _claim(
    conn: sa.Connection, consumer: str, batch: Sequence[Delivery]
) -> tuple[dict[UUID, Delivery], dict[UUID, bytes], datetime | None]:
    """Insert inbox rows. Returns the delivery that owns each newly seen event id,
    the recorded digest of every event id in the batch, and the consumer's horizon
    (read only when an id was new: only a new one is checked against it)."""
    first: dict[UUID, Delivery] = {}
    for delivery in batch:
        first.setdefault(delivery.envelope.event_id, delivery)
    if not first:
        return {}, {}, None
    new_ids, trimmed_before = insert_new(
        conn, consumer, [(i, d.digest, d.stream_seq) for i, d in first.items()]
    )
    owners = {event_id: d for event_id, d in first.items() if event_id in new_ids}
    recorded = {event_id: d.digest for event_id, d in owners.items()}
    seen_before = [event_id for event_id in first if event_id not in new_ids]
    if seen_before:
        found = conn.execute(
            sa.select(inbox.c.event_id, inbox.c.body_sha256).where(
                (inbox.c.consumer == consumer) & inbox.c.event_id.in_(seen_before)
            )
        )
        recorded |= {event_id: bytes(digest) for event_id, digest in found}
    return owners, recorded, trimmed_before


def insert_new(
    conn: sa.Connection, consumer: str, rows: Sequence[tuple[UUID, bytes, int]]
) -> tuple[set[UUID], datetime | None]:
    """Insert (event id, digest, stream seq) rows; returns the ids that were new
    and the consumer's horizon (None: nothing trimmed yet, or no id was new)."""
    inserted = conn.execute(
        _CLAIM,
        {
            "consumer": consumer,
            "event_ids": [event_id for event_id, _, _ in rows],
            "digests": [digest for _, digest, _ in rows],
            "seqs": [seq for _, _, seq in rows],
        },
    ).all()
    trimmed_before = inserted[0][1] if inserted else None
    return {event_id for event_id, _ in inserted}, trimmed_before


def advance(conn: sa.Connection, consumer: str, stream_seq: int) -> None:
    conn.execute(_ADVANCE, {"consumer": consumer, "stream_seq": stream_seq})


_new_position = insert(consumer_positions)
_ADVANCE = _new_position.on_conflict_do_update(
    index_elements=[consumer_positions.c.consumer],
    set_={
        "stream_seq": sa.func.greatest(
            consumer_positions.c.stream_seq, _new_position.excluded.stream_seq
        ),
        "updated_at": sa.func.now(),
    },
)
