"""The DLQ's audit rows read back, newest first: `dlq_discards`, and the replays
whose `dlq_replay_filters` row held entries back (application/dlq_audit.py)."""

from __future__ import annotations

import sqlalchemy as sa

from adapters.postgres.tables import dlq_discards, dlq_replay_filters, dlq_replays
from application.dlq_audit import DiscardRecord, HeldBackRecord


class SqlDlqAuditTrail:
    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def discards(self, limit: int) -> list[DiscardRecord]:
        d = dlq_discards.c
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(dlq_discards)
                .order_by(d.started_at.desc(), d.discard_id)
                .limit(limit)
            ).all()
        return [
            DiscardRecord(
                discard_id=row.discard_id,
                operator=row.operator,
                reason=row.reason,
                consumer=row.consumer,
                dry_run=row.dry_run,
                discarded=row.discarded,
                event_ids=[str(i) for i in row.event_ids],
                outcome=row.outcome,
                started_at=row.started_at,
            )
            for row in rows
        ]

    def held_back(self, limit: int) -> list[HeldBackRecord]:
        r, f = dlq_replays.c, dlq_replay_filters.c
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    r.replay_id,
                    r.operator,
                    r.consumer,
                    r.started_at,
                    f.held_back,
                    f.held_back_ids,
                )
                .join(dlq_replay_filters, f.replay_id == r.replay_id)
                .where(f.held_back > 0)
                .order_by(r.started_at.desc(), r.replay_id)
                .limit(limit)
            ).all()
        return [
            HeldBackRecord(
                replay_id=row.replay_id,
                operator=row.operator,
                consumer=row.consumer,
                held_back=row.held_back,
                event_ids=[str(i) for i in row.held_back_ids],
                started_at=row.started_at,
            )
            for row in rows
        ]
