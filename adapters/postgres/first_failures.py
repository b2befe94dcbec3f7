"""When a consumer first failed a message: a dead letter's first failure time.

JetStream counts a message's deliveries but keeps no time of the first failed one,
and a NAK cannot change a message's headers, so a consumer or a job worker writes
that time here when it first NAKs the message for a retry (a later failure keeps the
first time), through `FirstFailures`.
Dead-lettering reads it for `Club-First-Failed-At`, then forgets it; a message that
succeeds after failing forgets it too. Only failures cost a write: a message
handled on its first delivery never touches this table.

The same row counts the message's poison failures (`count_poison`), the ones the
poison bound counts. JetStream's delivery count cannot stand in for it: every
redelivery of an outage waited out is in it too, and a message redelivered through
a long outage would be dead-lettered at its first real failure.

Keyed by the message as JetStream holds it (consumer, stream, sequence), with the
time JetStream stored it: a stream recreated under the same name reuses sequences,
and a row left from the old one (a crash before `forget`) must not be taken for
this message's. A replayed message comes from another stream (CLUB_REPLAY), so a
replay that fails again starts a new first failure, as it is a new DLQ entry.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import datetime

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import first_failures


@attrs.frozen
class FailureKey:
    consumer: str
    stream: str
    stream_seq: int
    stored_at: datetime  # JetStream's, identical on every delivery of the message


@attrs.frozen
class FirstFailures:
    """The table's steps, the one way to them. Each runs in a transaction of its
    own, but a write joins the caller's when given one (`within`): a consumer
    writes with the batch whose failure it times, counts or settles."""

    engine: sa.Engine

    def record(
        self,
        keys: Collection[FailureKey],
        at: datetime,
        *,
        within: sa.Connection | None = None,
    ) -> None:
        """`at` for each key's first failure; a key already recorded keeps its time."""
        if not keys:
            return
        with self._transaction(within) as conn:
            _record(conn, keys, at)

    def count_poison(
        self,
        keys: Collection[FailureKey],
        at: datetime,
        *,
        within: sa.Connection | None = None,
    ) -> dict[FailureKey, int]:
        """One more poison failure of each key (`at` if it is the first failure of
        any kind); how many each has had, this one included."""
        if not keys:
            return {}
        with self._transaction(within) as conn:
            return _count_poison(conn, keys, at)

    def first(self, keys: Collection[FailureKey]) -> dict[FailureKey, datetime]:
        """The recorded first failure of each key that has one."""
        if not keys:
            return {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(first_failures).where(_matching(keys))
            ).mappings()
            found = {
                FailureKey(**{k: row[k] for k in _KEY}): row["first_failed_at"]
                for row in rows
            }
        return {key: found[key] for key in keys if key in found}

    def forget(
        self, keys: Collection[FailureKey], *, within: sa.Connection | None = None
    ) -> None:
        if not keys:
            return
        with self._transaction(within) as conn:
            conn.execute(sa.delete(first_failures).where(_matching(keys)))

    @contextmanager
    def _transaction(self, within: sa.Connection | None) -> Iterator[sa.Connection]:
        if within is not None:
            yield within
            return
        with self.engine.begin() as conn:
            yield conn


# The primary key: one row per message as JetStream holds it.
_MESSAGE = (
    first_failures.c.consumer,
    first_failures.c.stream,
    first_failures.c.stream_seq,
)


def _record(conn: sa.Connection, keys: Collection[FailureKey], at: datetime) -> None:
    stmt = insert(first_failures).values(
        [attrs.asdict(key) | {"first_failed_at": at} for key in set(keys)]
    )
    conn.execute(
        stmt.on_conflict_do_update(
            index_elements=_MESSAGE,
            set_={
                "stored_at": stmt.excluded.stored_at,
                "first_failed_at": stmt.excluded.first_failed_at,
                "poison_failures": 0,
            },
            # Only a row left by another message under this sequence is replaced.
            where=first_failures.c.stored_at != stmt.excluded.stored_at,
        )
    )


def _count_poison(
    conn: sa.Connection, keys: Collection[FailureKey], at: datetime
) -> dict[FailureKey, int]:
    stmt = insert(first_failures).values(
        [
            attrs.asdict(key) | {"first_failed_at": at, "poison_failures": 1}
            for key in set(keys)
        ]
    )
    # A row left by another message under this sequence starts again from this one.
    same = first_failures.c.stored_at == stmt.excluded.stored_at
    counted = conn.execute(
        stmt.on_conflict_do_update(
            index_elements=_MESSAGE,
            set_={
                "stored_at": stmt.excluded.stored_at,
                "first_failed_at": sa.case(
                    (same, first_failures.c.first_failed_at),
                    else_=stmt.excluded.first_failed_at,
                ),
                "poison_failures": sa.case(
                    (same, first_failures.c.poison_failures + 1), else_=1
                ),
            },
        ).returning(
            *(first_failures.c[name] for name in _KEY), first_failures.c.poison_failures
        )
    ).all()
    return {FailureKey(*row[:4]): row[4] for row in counted}


def add_poison_failures(conn: sa.Connection) -> None:
    """`create_all` adds no column to a table that exists: an older database
    gets the count here (0 for a row recorded before it; bounded by the next
    failures alike). Asked first, because ALTER TABLE locks the table even when
    the column is there, and `migrate` may run beside working roles."""
    conn.execute(sa.text(_ADD_POISON_FAILURES))


_ADD_POISON_FAILURES = """
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT FROM pg_attribute
        WHERE attrelid = 'first_failures'::regclass
          AND attname = 'poison_failures' AND NOT attisdropped
    ) THEN
        ALTER TABLE first_failures
            ADD COLUMN poison_failures integer NOT NULL DEFAULT 0;
    END IF;
END $$
"""


_KEY = ("consumer", "stream", "stream_seq", "stored_at")


def _matching(keys: Collection[FailureKey]) -> sa.ColumnElement[bool]:
    columns = [first_failures.c[name] for name in _KEY]
    return sa.tuple_(*columns).in_([tuple(attrs.astuple(key)) for key in keys])
