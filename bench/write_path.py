"""The single-writer ceiling, and the xid-horizon alternative it is measured against.

As shipped, every insert into the event store takes `LOCK TABLE ... IN EXCLUSIVE
MODE` until it commits, so ids are handed out in commit order and a reader tailing
by id never passes a gap that fills in later — at the price of one writer at a time.

The alternative (Watermill's SQL pub/sub): writers take no lock; each row records
its transaction id (`xid8`); readers order by (transaction id, notification id) and
stop below the oldest transaction still in flight (`pg_snapshot_xmin`), so whatever
commits later sorts after everything already read.
"""

from __future__ import annotations

from collections.abc import Sequence

from eventsourcing.persistence import Notification
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Identifier

from adapters.postgres.database import create_engine, eventsourcing_env
from adapters.postgres.recorder import ClubRecorder
from adapters.postgres.tailing import PER_WRITER, WRITERS, tail_while_writing
from entrypoints.cli.demo import lesson_with_enrollments
from entrypoints.runtime.bootstrap import Container, build, migrate_database

Position = tuple[int, int]  # (transaction id, notification id)


class XidHorizonRecorder(ClubRecorder):
    def _lock_table(self, curs: Cursor[DictRow]) -> None:
        pass  # writers run concurrently; readers stop at the horizon instead

    def select_after(
        self, position: Position, limit: int
    ) -> list[tuple[Position, Notification]]:
        statement = SQL(
            "SELECT tx_id::text::bigint AS tx, * FROM {table}"
            " WHERE (tx_id, notification_id) > (%s::text::xid8, %s)"
            "   AND tx_id < pg_snapshot_xmin(pg_current_snapshot())"
            " ORDER BY tx_id, notification_id LIMIT %s"
        ).format(table=Identifier(self.datastore.schema, self.events_table_name))
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, [str(position[0]), position[1], limit])
            return [
                (
                    (row["tx"], row["notification_id"]),
                    Notification(
                        id=row["notification_id"],
                        originator_id=row["originator_id"],
                        originator_version=row["originator_version"],
                        topic=row["topic"],
                        state=bytes(row["state"]),
                    ),
                )
                for row in curs.fetchall()
            ]

    def newest(self) -> Position:
        statement = SQL(
            "SELECT tx_id::text::bigint AS tx, notification_id FROM {table}"
            " ORDER BY tx_id DESC, notification_id DESC LIMIT 1"
        ).format(table=Identifier(self.datastore.schema, self.events_table_name))
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            row = curs.execute(statement).fetchone()
        return (row["tx"], row["notification_id"]) if row else (0, 0)


HORIZON_COLUMN = """
ALTER TABLE club_events ADD COLUMN tx_id xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX club_events_horizon ON club_events (tx_id, notification_id);
"""


def horizon_container(database_url: str) -> Container:
    """Club on an empty database, writing through the horizon recorder."""
    migrate_database(database_url)
    engine = create_engine(database_url, pool_size=20)
    with engine.begin() as conn:
        conn.exec_driver_sql(HORIZON_COLUMN)
    env = eventsourcing_env(database_url)
    env["APPLICATION_RECORDER_TOPIC"] = f"{__name__}:XidHorizonRecorder"
    engine.dispose()
    return build(database_url, pool_size=20, event_store_env=env)


def horizon_readers_never_skip(container: Container, rounds: int) -> int:
    """The readers-never-skip scenario (10 writers, 2 tailing readers) on the
    horizon recorder, `rounds` times. Returns how many rounds passed."""
    recorder = container.app.recorder
    assert isinstance(recorder, XidHorizonRecorder)

    def read_after(position: Position) -> Sequence[tuple[Position, int]]:
        return [(key, n.id) for key, n in recorder.select_after(position, 50)]

    passed = 0
    for _ in range(rounds):
        start = recorder.newest()
        problems, seen = tail_while_writing(
            lambda: lesson_with_enrollments(container, PER_WRITER),
            WRITERS,
            read_after,
            start,
        )
        everything = [n.id for _, n in recorder.select_after(start, 10**6)]
        complete = len(everything) == WRITERS * (1 + 2 * PER_WRITER)
        if not problems and complete and seen[0] == seen[1] == everything:
            passed += 1
    return passed
