"""When a consumer first failed a message: a dead letter's first failure time.

JetStream counts a message's deliveries but keeps no time of the first failed one,
and a NAK cannot change a message's headers, so the consumer writes that time here
when it first NAKs the message for a retry (a later failure keeps the first time).
Dead-lettering reads it for `Club-First-Failed-At`, then forgets it; a message that
succeeds after failing forgets it too. Only failures cost a write: a message
handled on its first delivery never touches this table.

Keyed by the message as JetStream holds it (consumer, stream, sequence), with the
time JetStream stored it: a stream recreated under the same name reuses sequences,
and a row left from the old one (a crash before `forget`) must not be taken for
this message's. A replayed message comes from another stream (CLUB_REPLAY), so a
replay that fails again starts a new first failure, as it is a new DLQ entry.
"""

from __future__ import annotations

from collections.abc import Collection
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


def record(conn: sa.Connection, keys: Collection[FailureKey], at: datetime) -> None:
    """`at` for each key's first failure; a key already recorded keeps its time."""
    if not keys:
        return
    stmt = insert(first_failures).values(
        [attrs.asdict(key) | {"first_failed_at": at} for key in set(keys)]
    )
    conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[
                first_failures.c.consumer,
                first_failures.c.stream,
                first_failures.c.stream_seq,
            ],
            set_={
                "stored_at": stmt.excluded.stored_at,
                "first_failed_at": stmt.excluded.first_failed_at,
            },
            # Only a row left by another message under this sequence is replaced.
            where=first_failures.c.stored_at != stmt.excluded.stored_at,
        )
    )


def first(
    conn: sa.Connection, keys: Collection[FailureKey]
) -> dict[FailureKey, datetime]:
    """The recorded first failure of each key that has one."""
    if not keys:
        return {}
    rows = conn.execute(sa.select(first_failures).where(_matching(keys))).mappings()
    found = {
        FailureKey(**{k: row[k] for k in _KEY}): row["first_failed_at"] for row in rows
    }
    return {key: found[key] for key in keys if key in found}


def forget(conn: sa.Connection, keys: Collection[FailureKey]) -> None:
    if keys:
        conn.execute(sa.delete(first_failures).where(_matching(keys)))


_KEY = ("consumer", "stream", "stream_seq", "stored_at")


def _matching(keys: Collection[FailureKey]) -> sa.ColumnElement[bool]:
    columns = [first_failures.c[name] for name in _KEY]
    return sa.tuple_(*columns).in_([tuple(attrs.astuple(key)) for key in keys])


@attrs.frozen
class FirstFailures:
    """The three steps, each in a transaction of its own (the job worker's use)."""

    engine: sa.Engine

    def record(self, key: FailureKey, at: datetime) -> None:
        with self.engine.begin() as conn:
            record(conn, [key], at)

    def first(self, key: FailureKey) -> datetime | None:
        with self.engine.connect() as conn:
            return first(conn, [key]).get(key)

    def forget(self, key: FailureKey) -> None:
        with self.engine.begin() as conn:
            forget(conn, [key])
