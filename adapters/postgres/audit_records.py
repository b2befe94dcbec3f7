"""What the audit compares, as PostgreSQL records it: every event published up to
the relay's position, and each consumer's inbox (its applied events and the horizon
retention trimmed it to)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import sqlalchemy as sa
from eventsourcing.persistence import ApplicationRecorder, Mapper

from adapters.postgres.inbox import horizon
from adapters.postgres.lease import RELAY_LEASE, RelayLease
from adapters.postgres.tables import inbox
from application.console_reads import PublishedEvent
from application.contracts.mapping import published_envelope


class PostgresAuditRecords:
    """The audit's records (application/console_reads.py:AuditRecords)."""

    def __init__(
        self, engine: sa.Engine, recorder: ApplicationRecorder, mapper: Mapper[UUID]
    ) -> None:
        self._engine = engine
        self._recorder = recorder
        self._mapper = mapper

    def published_up_to_position(self) -> list[PublishedEvent]:
        """Every published event up to the relay's position, in log order."""
        position = RelayLease(
            self._engine, name=RELAY_LEASE, owner="audit", ttl=1
        ).position()
        found = []
        start = 0
        while start < position:
            batch = self._recorder.select_notifications(
                start=start, limit=1000, stop=position, inclusive_of_start=False
            )
            if not batch:
                break
            for notification in batch:
                envelope = published_envelope(self._mapper, notification)
                if envelope is not None:
                    occurred = envelope.occurred_at
                    if occurred.tzinfo is None:  # a stored time is UTC
                        occurred = occurred.replace(tzinfo=UTC)
                    found.append(
                        PublishedEvent(
                            notification.id,
                            str(envelope.event_id),
                            envelope.type,
                            occurred,
                        )
                    )
            start = batch[-1].id
        return found

    def applied_event_ids(self, consumer: str) -> set[str]:
        with self._engine.connect() as conn:
            return {
                str(event_id)
                for event_id in conn.execute(
                    sa.select(inbox.c.event_id).where(inbox.c.consumer == consumer)
                ).scalars()
            }

    def inbox_horizon(self, consumer: str) -> datetime | None:
        with self._engine.connect() as conn:
            return horizon(conn, consumer)
