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

An insert is one statement, its own transaction (the connections are in
autocommit): a function `club migrate` creates inserts the answers, takes the
table lock, notifies and inserts the events. The library's insert takes six round
trips; the same seven statements in one pipeline take one, but psycopg's Python for
each cost twice what the one statement does. Since a statement that reaches the
server may commit, an insert first asks its connection's socket whether the server
closed it while idle (`server_spoke`, no round trip), and only then checks it: a
connection found dead there has been sent nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import attrs
import psycopg
from eventsourcing.persistence import (
    ApplicationRecorder,
    InterfaceError,
    Notification,
    OperationalError,
    ProgrammingError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from adapters.crash import crash_point
from adapters.postgres.call_deadline import deadline_passed
from adapters.postgres.database import server_spoke
from adapters.postgres.enrollment_lookups import key_and_student
from application.idempotency import Answer, Recorded, Request

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
    def __init__(
        self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events"
    ) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        names = {
            "schema": Identifier(datastore.schema),
            "function": Identifier(f"{events_table_name}_insert"),
            "table": Identifier(events_table_name),
            "event": Identifier(self.stored_event_type_name),
            "channel": Identifier(self.channel_name),
        }
        self.sql_create_statements.append(SQL(_INSERT_FUNCTION).format(**names))
        # Rendered once: a Composed is rendered again on every execute.
        self._insert = SQL(_INSERT).format(**names).as_bytes(None)
        self._lock_timeout = f"{datastore.lock_timeout}s"

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        for retry in (False, True):
            progress = _Progress()
            try:
                ids = self._insert_in_one_statement(
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

    def key_and_student(
        self, request: Request, student_id: str
    ) -> tuple[Recorded | None, bool]:
        """`EnrollmentLookups` on the event store's own connections."""
        return self._read(ClubRecorder._key_and_student, request, student_id)

    def _key_and_student(
        self, request: Request, student_id: str
    ) -> tuple[Recorded | None, bool]:
        with self.datastore.get_connection() as conn:
            return key_and_student(conn, request, student_id)

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

    def _insert_in_one_statement(
        self,
        stored_events: Sequence[StoredEvent],
        *,
        progress: _Progress,
        answers: Sequence[tuple[Request, Answer]] = (),
        **_: Any,  # `tracking`: an application recorder keeps none (the library's)
    ) -> Sequence[int]:
        """The requests' answers (`save(..., answers=...)`) commit with the events,
        or neither does: the first error is raised (a key answered meanwhile by a
        racing attempt, or a version taken: IntegrityError)."""
        events = [
            self.construct_pg_stored_event(
                event.originator_id, event.originator_version, event.topic, event.state
            )
            for event in stored_events
        ]
        requests = [request for request, _ in answers]
        values = (
            [request.scope for request in requests],
            [request.key for request in requests],
            [request.fingerprint for request in requests],
            [answer.status_code for _, answer in answers],
            [Jsonb(answer.body) for _, answer in answers],
            [Jsonb(dict(answer.headers)) for _, answer in answers],
            events,
            self._lock_timeout,
        )
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(row_factory=tuple_row) as curs,
        ):
            if not conn.autocommit:  # the statement would commit nothing
                raise ProgrammingError("the event store's connections must autocommit")
            if server_spoke(conn):  # it closed this idle connection: say so now,
                ConnectionPool.check_connection(conn)  # before anything is sent
            crash_point("api.before_commit")  # nothing sent: nothing can commit
            progress.committing = True
            try:
                curs.execute(self._insert, values, prepare=True)
            except psycopg.errors.UndefinedFunction as missing:
                msg = f"{missing.diag.message_primary}: run `club migrate`"
                raise ProgrammingError(msg) from missing
            return [notification_id for (notification_id,) in curs.fetchall()]


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


# The insert, as `club migrate` creates it with the event store. The answers go in
# before the table lock (a key answered by a racing attempt fails before it waits);
# the lock serialises the writers, so notification ids are committed in the order
# they are drawn (the library's reason, `PostgresApplicationRecorder._lock_table`).
_INSERT_FUNCTION = """
CREATE OR REPLACE FUNCTION {schema}.{function}(
  scopes text[], keys text[], fingerprints text[], status_codes integer[],
  bodies jsonb[], headers jsonb[], events {schema}.{event}[], lock_timeout text
) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
BEGIN
  IF cardinality(scopes) > 0 THEN
    INSERT INTO request_answers (scope, key, fingerprint, status_code, body, headers)
    SELECT * FROM unnest(scopes, keys, fingerprints, status_codes, bodies, headers);
  END IF;
  PERFORM set_config('lock_timeout', lock_timeout, true);
  LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
  NOTIFY {channel};
  RETURN QUERY
    INSERT INTO {schema}.{table} AS t (originator_id, originator_version, topic, state)
    SELECT originator_id, originator_version, topic, state FROM unnest(events)
    RETURNING notification_id;
END
$$
"""

# Binary parameters: psycopg dumps a text array's elements through a regular
# expression each. Cast, because an empty list names no type, and small ints are
# dumped as smallint: the function is found whatever the lists hold.
_INSERT = """
SELECT * FROM {schema}.{function}(
  %b::text[], %b::text[], %b::text[], %b::integer[],
  %b::jsonb[], %b::jsonb[], %b::{schema}.{event}[], %b::text
)
"""
