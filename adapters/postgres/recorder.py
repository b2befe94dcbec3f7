"""The event store's recorder: fail fast and recover fast when the database restarts.

The library retries every call ten times, and its pool checks stale connections
one by one with a growing pause between them. After a restart every pooled
connection is dead, so one read could wait most of a minute and the pool took
longer still to come back. Here a connection error drops all stale connections
at once; a read is then tried once more, and so is an insert whose connection was
lost before its COMMIT was sent (nothing of it can have committed). An insert lost
after that is not retried: the caller — HTTP: 503 + Retry-After — decides, and the
Idempotency-Key recognises a commit whose reply was lost. The pool pings no
connection before use (docs/decisions/2026-11-30-no-pre-ping.md): the first
statement on a dead one fails at once, and is retried by these rules.

An insert is one round trip: BEGIN, the answers, the table lock, the events and
COMMIT go out together and are read back after one Sync (the library's syncs after
the answers, after the events and around its COMMIT: six round trips). Since its
COMMIT goes out before any reply is read, an insert first asks its connection's
socket whether the server closed it while idle (`server_spoke`, no round trip), and
only then checks it: a connection found dead there has been sent nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import attrs
import psycopg
from eventsourcing.persistence import (
    ApplicationRecorder,
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import Connection
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier
from psycopg_pool import ConnectionPool, PoolTimeout

from adapters.crash import crash_point
from adapters.postgres.answers import insert_answers
from adapters.postgres.call_deadline import deadline_passed
from adapters.postgres.database import server_spoke
from application.idempotency import Answer, Request

T = TypeVar("T")
CONNECTION_LOST = (InterfaceError, OperationalError)
_Base = PostgresApplicationRecorder


def _single(method: Callable[..., Any]) -> Callable[..., Any]:
    """The library method without its retry decorator."""
    return method.__wrapped__  # type: ignore[attr-defined,no-any-return]


class _Progress:
    """How far one attempt at an insert got: past this, a COMMIT may be sent."""

    def __init__(self) -> None:
        self.committing = False


class ClubRecorder(PostgresApplicationRecorder):
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        for retry in (False, True):
            progress = _Progress()
            try:
                ids = self._insert_in_one_round_trip(
                    stored_events, progress=progress, **kwargs
                )
            except CONNECTION_LOST as error:
                self._drop_stale_connections(error)
                if retry or progress.committing or not connection_lost(error):
                    raise
                continue
            return ids
        raise AssertionError("unreachable")  # pragma: no cover

    def select_events(self, *args: Any, **kwargs: Any) -> Sequence[StoredEvent]:
        return self._read(_single(_Base.select_events), *args, **kwargs)

    def select_notifications(self, *args: Any, **kwargs: Any) -> Sequence[Notification]:
        return self._read(_single(_Base.select_notifications), *args, **kwargs)

    def select_notifications_of(
        self, topics: Collection[str], *, after: int, limit: int
    ) -> Sequence[Notification]:
        """Of the next `limit` notifications after `after`, those of `topics`, and
        the last one whatever its topic (so the caller's position moves past an
        internal tail). Ids have gaps; resume after the last one returned.

        The relay and the rebuild skip half the log (a lesson's seat bookkeeping):
        the server leaves it out here instead of Python decoding it (~2 µs a row).
        """
        return self.select_stretch_of(topics, after=after, limit=limit).notifications

    def select_stretch_of(
        self, topics: Collection[str], *, after: int, limit: int
    ) -> Stretch:
        """`select_notifications_of`, and whether the stretch reached the log's end."""
        return self._read(ClubRecorder._notifications_of, topics, after, limit)

    def max_notification_id(self) -> int | None:
        newest: int | None = self._read(_single(_Base.max_notification_id))
        return newest

    def _read(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except CONNECTION_LOST as error:
            self._drop_stale_connections(error)
            return method(self, *args, **kwargs)  # on a fresh connection

    def _notifications_of(
        self, topics: Collection[str], after: int, limit: int
    ) -> Stretch:
        statement = SQL(_NOTIFICATIONS_OF).format(
            schema=Identifier(self.datastore.schema),
            table=Identifier(self.events_table_name),
        )
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(row_factory=tuple_row) as curs,
        ):
            curs.execute(statement, (after, limit, list(topics)), prepare=True)
            rows = curs.fetchall()
            notifications = [
                Notification(
                    id=row[0],
                    originator_id=row[1],
                    originator_version=row[2],
                    topic=row[3],
                    state=bytes(row[4]),
                )
                for row in rows
            ]
            # Every row carries how many the stretch scanned: fewer than asked
            # for, and the log ended there when it was read.
            return Stretch(notifications, at_end=not rows or rows[0][5] < limit)

    def _drop_stale_connections(self, error: BaseException) -> None:
        """A call abandoned at its deadline says the server behind the pool hung:
        every idle connection is closed unasked (checking one would wait as long
        again) and replaced. Otherwise each is checked, and the dead dropped."""
        if deadline_passed(error):
            self.datastore.pool.drain()
        else:
            self.datastore.pool.check()

    def _insert_in_one_round_trip(
        self,
        stored_events: Sequence[StoredEvent],
        *,
        progress: _Progress,
        answers: Sequence[tuple[Request, Answer]] = (),
        **_: Any,  # `tracking`: an application recorder keeps none (the library's)
    ) -> Sequence[int]:
        """The requests' answers (`save(..., answers=...)`) commit with the events.
        A failing statement makes the server skip the rest up to the Sync, COMMIT
        included; the first error is raised (a key answered meanwhile by a racing
        attempt, or a version taken: IntegrityError)."""
        rows = [
            self.construct_pg_stored_event(
                event.originator_id, event.originator_version, event.topic, event.state
            )
            for event in stored_events
        ]
        with (
            self.datastore.get_connection() as conn,
            conn.cursor() as curs,
            conn.cursor() as inserted,
        ):
            if server_spoke(conn):  # it closed this idle connection: say so now,
                ConnectionPool.check_connection(conn)  # before anything is sent
            try:
                with conn.pipeline():  # its end sends the one Sync and reads back
                    curs.execute("BEGIN", prepare=True)
                    insert_answers(curs, answers)
                    self._lock_table(curs)
                    self._notify_channel(curs)
                    statement = self.insert_events_statement
                    inserted.execute(statement, (rows,), prepare=True)
                    crash_point("api.before_commit")  # sent, not committed
                    progress.committing = True
                    curs.execute("COMMIT", prepare=True)
            except psycopg.Error:
                _roll_back(conn)
                raise
            return [row["notification_id"] for row in inserted.fetchall()]


def _roll_back(conn: Connection[Any]) -> None:
    """A failed statement left the transaction open, aborted (a lost connection
    left nothing to roll back: the pool drops it)."""
    if conn.info.transaction_status == TransactionStatus.INERROR:
        with contextlib.suppress(psycopg.Error):
            conn.execute("ROLLBACK")


# The server ended the session (admin shutdown, crash, cannot connect now) or the
# connection failed (class 08, or psycopg's own errors, which carry no SQLSTATE).
# Not a statement or lock timeout (57014, 55P03): those reached a live server.
_SESSION_ENDED = frozenset({"57P01", "57P02", "57P03"})


def connection_lost(error: BaseException) -> bool:
    """Whether `error` (the library's, or psycopg's) means the connection is gone."""
    cause = error.__cause__ if error.__cause__ is not None else error
    if isinstance(cause, PoolTimeout):
        return False  # no connection within the wait: trying again waits as long
    if not isinstance(cause, psycopg.Error):
        return False
    state = cause.sqlstate
    return state is None or state.startswith("08") or state in _SESSION_ENDED


_NOTIFICATIONS_OF = """
WITH scanned AS MATERIALIZED (
  SELECT notification_id, originator_id, originator_version, topic, state
  FROM {schema}.{table} WHERE notification_id > %s
  ORDER BY notification_id LIMIT %s
)
SELECT notification_id, originator_id, originator_version, topic, state,
  (SELECT count(*) FROM scanned)
FROM scanned
WHERE topic = ANY(%s) OR notification_id = (SELECT max(notification_id) FROM scanned)
ORDER BY notification_id
"""


@attrs.frozen
class Stretch:
    """A stretch of the log as read, and whether it reached the log's end then:
    a reader at the end waits for news instead of reading again at once."""

    notifications: Sequence[Notification]
    at_end: bool


def select_notifications_of(
    recorder: ApplicationRecorder,
    topics: Collection[str],
    *,
    after: int,
    limit: int,
) -> Sequence[Notification]:
    """`ClubRecorder.select_notifications_of`; another recorder (the library's
    in-memory one) returns every notification and the caller skips the rest."""
    return select_stretch_of(recorder, topics, after=after, limit=limit).notifications


def select_stretch_of(
    recorder: ApplicationRecorder,
    topics: Collection[str],
    *,
    after: int,
    limit: int,
) -> Stretch:
    """`ClubRecorder.select_stretch_of`, or every notification of the stretch."""
    if isinstance(recorder, ClubRecorder):
        return recorder.select_stretch_of(topics, after=after, limit=limit)
    notifications = recorder.select_notifications(
        start=after, limit=limit, inclusive_of_start=False
    )
    return Stretch(notifications, at_end=len(notifications) < limit)
