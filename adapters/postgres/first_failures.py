"""When a consumer first failed a message: a dead letter's first failure time.

JetStream counts a message's deliveries but keeps no time of the first failed one,
and a NAK cannot change a message's headers, so a consumer or a job worker writes
that time here when it first NAKs the message for a retry (a later failure keeps the
first time), through `FirstFailures`.
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


@attrs.frozen
class FirstFailures:
    """The table's three steps, the one way to them. Each runs in a transaction of
    its own, but `record` joins the caller's when given one (`within`): a consumer
    writes the time with the batch whose failure it times."""

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
        if within is not None:
            _record(within, keys, at)
            return
        with self.engine.begin() as conn:
            _record(conn, keys, at)

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

    def forget(self, keys: Collection[FailureKey]) -> None:
        if not keys:
            return
        with self.engine.begin() as conn:
            conn.execute(sa.delete(first_failures).where(_matching(keys)))


def _record(conn: sa.Connection, keys: Collection[FailureKey], at: datetime) -> None:
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


_KEY = ("consumer", "stream", "stream_seq", "stored_at")


def _matching(keys: Collection[FailureKey]) -> sa.ColumnElement[bool]:
    columns = [first_failures.c[name] for name in _KEY]
    return sa.tuple_(*columns).in_([tuple(attrs.astuple(key)) for key in keys])
