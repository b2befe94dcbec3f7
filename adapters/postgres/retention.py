"""Retention's deletes in PostgreSQL: old inbox rows and idempotency answers.

Deleted in bounded batches, each its own short transaction, so a trim never holds
a long lock nor bloats one transaction. Before any inbox row of a consumer goes,
that consumer's horizon moves past it (adapters/postgres/inbox.py refuses an event
from before the horizon that finds no row), under the consumer's own advisory lock:
a batch the consumer is applying meanwhile either sees the row or sees the horizon.

Several copies may run (two hosts, a cron job beside the role): a pass takes a
session advisory lock and a second copy skips its pass; the deletes are idempotent
and SKIP LOCKED anyway.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.inbox import consumer_lock
from adapters.postgres.tables import (
    inbox,
    inbox_horizons,
    notifications,
    request_answers,
)

TRIM_LOCK = 0x0C1C  # pg advisory lock key: one trim pass at a time
BATCH_ROWS = 1_000
# An event's time comes from the API host's clock, an inbox row's from the
# database's: rows are kept this much past the horizon, so a skew between the two
# never leaves a trimmed event after its consumer's horizon.
CLOCK_MARGIN = timedelta(minutes=10)


@attrs.frozen
class TrimmedRows:
    inbox: int = 0
    answers: int = 0
    skipped: bool = False  # another copy held the lock: nothing done this time


class PostgresTrim:
    def __init__(
        self,
        engine: sa.Engine,
        *,
        inbox_s: float,
        answers_s: float,
        batch_rows: int = BATCH_ROWS,
        clock_margin: timedelta = CLOCK_MARGIN,
    ) -> None:
        self._engine = engine
        self._clock_margin = clock_margin
        self._inbox_age = timedelta(seconds=inbox_s)
        self._answers_age = timedelta(seconds=answers_s)
        self._batch_rows = batch_rows

    def run_once(self) -> TrimmedRows:
        with self._engine.connect() as holder:
            taken = holder.execute(
                sa.select(sa.func.pg_try_advisory_lock(TRIM_LOCK))
            ).scalar_one()
            holder.commit()
            if not taken:
                return TrimmedRows(skipped=True)
            try:
                now: datetime = holder.execute(sa.select(sa.func.now())).scalar_one()
                holder.commit()
                return TrimmedRows(
                    inbox=self._trim_inbox(now - self._inbox_age),
                    answers=self._trim_answers(now - self._answers_age),
                )
            finally:
                holder.execute(sa.select(sa.func.pg_advisory_unlock(TRIM_LOCK)))
                holder.commit()

    def _trim_inbox(self, cutoff: datetime) -> int:
        with self._engine.connect() as conn:
            consumers = conn.execute(
                sa.select(inbox.c.consumer)
                .where(inbox.c.applied_at < cutoff - self._clock_margin)
                .distinct()
            ).scalars()
            names = list(consumers)
        deleted = 0
        for consumer in names:
            move_horizon(self._engine, consumer, cutoff)
            deleted += self._delete_in_batches(
                inbox,
                (inbox.c.consumer == consumer)
                & (inbox.c.applied_at < cutoff - self._clock_margin),
            )
        return deleted

    def _trim_answers(self, cutoff: datetime) -> int:
        return self._delete_in_batches(
            request_answers, request_answers.c.created_at < cutoff
        )

    def _delete_in_batches(self, table: sa.Table, old: sa.ColumnElement[bool]) -> int:
        key = sa.tuple_(*table.primary_key.columns)
        batch = (
            sa.select(*table.primary_key.columns)
            .where(old)
            .limit(self._batch_rows)
            .with_for_update(skip_locked=True)
        )
        deleted = 0
        while True:
            with self._engine.begin() as conn:
                gone = conn.execute(sa.delete(table).where(key.in_(batch))).rowcount
            deleted += gone
            if gone < self._batch_rows:
                return deleted


def move_horizon(engine: sa.Engine, consumer: str, occurred_before: datetime) -> None:
    """Committed before the rows go, under the consumer's lock, only ever forward."""
    upsert = insert(inbox_horizons).values(
        consumer=consumer, occurred_before=occurred_before
    )
    with engine.begin() as conn:
        consumer_lock(conn, consumer)
        conn.execute(
            upsert.on_conflict_do_update(
                index_elements=[inbox_horizons.c.consumer],
                set_={
                    "occurred_before": sa.func.greatest(
                        inbox_horizons.c.occurred_before,
                        upsert.excluded.occurred_before,
                    ),
                    "updated_at": sa.func.now(),
                },
            )
        )


def create_retention_indexes(conn: sa.Connection) -> None:
    """`create_all` makes a new table's indexes only: an existing database gets
    these here (once; a big inbox is indexed once, at that migration), the work
    lists' index on waiting notifications with them."""
    for table in (inbox, request_answers, notifications):
        for index in table.indexes:
            index.create(conn, checkfirst=True)
