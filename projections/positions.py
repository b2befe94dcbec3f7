"""How far a read model has got: the stream sequence its consumer last committed."""

from __future__ import annotations

import sqlalchemy as sa

# The consumer runner owns this table; a read model only reads its own row, in the
# same snapshot as its rows, so the two always agree.
_positions = sa.table(
    "consumer_positions", sa.column("consumer"), sa.column("stream_seq")
)


def last_applied_seq(conn: sa.Connection, consumer: str) -> int:
    position = conn.execute(
        sa.select(_positions.c.stream_seq).where(_positions.c.consumer == consumer)
    ).scalar()
    return int(position or 0)


def same_snapshot(conn: sa.Connection) -> None:
    """Call first in the transaction: later statements see one snapshot."""
    conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
