"""What PostgreSQL records of one aggregate's journey, for `club trace`.

Each read is one indexed query: the aggregate's stored events with their
notification ids (its primary key), the relay's lease row, the inbox rows and
notification rows of its event ids (primary keys), and a purchase's saga deadline.
"""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

import sqlalchemy as sa
from eventsourcing.persistence import ApplicationRecorder, Notification
from eventsourcing.postgres import PostgresApplicationRecorder

from adapters.postgres.lease import RELAY_LEASE
from adapters.postgres.saga_feed import FEED
from adapters.postgres.tables import (
    inbox,
    notifications,
    relay_leases,
    saga_deadlines,
    saga_positions,
)
from application.console_reads import DeadlineRow, InboxRow
from application.next_steps import NotificationFact, RelayFact


class PostgresTrace:
    """A trace's records (application/console_reads.py:TraceRecords)."""

    def __init__(self, engine: sa.Engine, recorder: ApplicationRecorder) -> None:
        if not isinstance(recorder, PostgresApplicationRecorder):
            msg = "a trace reads the PostgreSQL event store"
            raise TypeError(msg)
        self._engine = engine
        schema = recorder.datastore.schema or "public"
        self._events = sa.table(
            recorder.events_table_name,
            sa.column("notification_id", sa.BigInteger),
            sa.column("originator_id", sa.Uuid),
            sa.column("originator_version", sa.BigInteger),
            sa.column("topic", sa.Text),
            sa.column("state", sa.LargeBinary),
            schema=schema,
        )

    def stored_events(self, aggregate_id: UUID) -> list[Notification]:
        """The aggregate's events in version order, each with its notification id
        (the library's select_events leaves the id out)."""
        e = self._events.c
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    e.notification_id,
                    e.originator_id,
                    e.originator_version,
                    e.topic,
                    e.state,
                )
                .where(e.originator_id == aggregate_id)
                .order_by(e.originator_version)
            ).all()
        return [
            Notification(
                id=int(row.notification_id),
                originator_id=row.originator_id,
                originator_version=int(row.originator_version),
                topic=str(row.topic),
                state=bytes(row.state),
            )
            for row in rows
        ]

    def relay(self) -> RelayFact:
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(
                    relay_leases.c.position,
                    relay_leases.c.owner,
                    relay_leases.c.lease_until,
                    relay_leases.c.lease_until > sa.func.now(),
                ).where(relay_leases.c.name == RELAY_LEASE)
            ).one_or_none()
        if row is None:  # no relay ever ran
            return RelayFact(position=0, holder=None, lease_until=None, live=False)
        return RelayFact(
            position=int(row[0]), holder=row[1], lease_until=row[2], live=bool(row[3])
        )

    def inbox_rows(self, event_ids: Collection[UUID]) -> list[InboxRow]:
        if not event_ids:
            return []
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    inbox.c.consumer,
                    inbox.c.event_id,
                    inbox.c.stream_seq,
                    inbox.c.applied_at,
                ).where(inbox.c.event_id.in_(list(event_ids)))
            ).all()
        return [
            InboxRow(
                consumer=r.consumer,
                event_id=r.event_id,
                stream_seq=int(r.stream_seq),
                applied_at=r.applied_at,
            )
            for r in rows
        ]

    def notifications(self, event_ids: Collection[UUID]) -> list[NotificationFact]:
        if not event_ids:
            return []
        n = notifications.c
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(notifications)
                .where(n.event_id.in_(list(event_ids)))
                .order_by(n.created_at)
            ).all()
        return [
            NotificationFact(
                event_id=r.event_id,
                kind=r.kind,
                state=r.state,
                attempts=int(r.attempts),
                last_error=r.last_error,
                created_at=r.created_at,
                updated_at=r.updated_at,
                sent_at=r.sent_at,
            )
            for r in rows
        ]

    def saga_deadline(self, purchase_id: UUID) -> DeadlineRow | None:
        d = saga_deadlines.c
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(
                    d.due_at,
                    d.claimed_by,
                    d.claimed_until,
                    d.last_error,
                    (d.claimed_until > sa.func.now()).label("held"),
                ).where(d.purchase_id == purchase_id)
            ).one_or_none()
        if row is None:
            return None
        held = bool(row.held)  # a lapsed claim is nobody's: another process takes it
        return DeadlineRow(
            due_at=row.due_at,
            claimed_by=row.claimed_by if held else None,
            claimed_until=row.claimed_until if held else None,
            last_error=row.last_error,
        )

    def saga_feed_position(self) -> int:
        with self._engine.connect() as conn:
            found = conn.execute(
                sa.select(saga_positions.c.position).where(
                    saga_positions.c.name == FEED
                )
            ).scalar()
        return int(found or 0)
