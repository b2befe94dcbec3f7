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
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import psycopg
from eventsourcing.persistence import (
    ApplicationRecorder,
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import Cursor
from psycopg.rows import DictRow, tuple_row
from psycopg.sql import SQL, Identifier
from psycopg_pool import PoolTimeout

from adapters.crash import crash_point
from adapters.postgres.answers import insert_answers
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
                ids: Sequence[int] | None = _single(_Base.insert_events)(
                    self, stored_events, progress=progress, **kwargs
                )
            except CONNECTION_LOST as error:
                self._drop_stale_connections()
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
        return self._read(ClubRecorder._notifications_of, topics, after, limit)

    def max_notification_id(self) -> int | None:
        newest: int | None = self._read(_single(_Base.max_notification_id))
        return newest

    def _read(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except CONNECTION_LOST:
            self._drop_stale_connections()
            return method(self, *args, **kwargs)  # on a fresh connection

    def _notifications_of(
        self, topics: Collection[str], after: int, limit: int
    ) -> Sequence[Notification]:
        statement = SQL(_NOTIFICATIONS_OF).format(
            schema=Identifier(self.datastore.schema),
            table=Identifier(self.events_table_name),
        )
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(row_factory=tuple_row) as curs,
        ):
            curs.execute(statement, (after, limit, list(topics)), prepare=True)
            return [
                Notification(
                    id=row[0],
                    originator_id=row[1],
                    originator_version=row[2],
                    topic=row[3],
                    state=bytes(row[4]),
                )
                for row in curs.fetchall()
            ]

    def _drop_stale_connections(self) -> None:
        self.datastore.pool.check()

    def _insert_events(
        self,
        curs: Cursor[DictRow],
        stored_events: Sequence[StoredEvent],
        *,
        answers: Sequence[tuple[Request, Answer]] = (),
        **kwargs: Any,
    ) -> None:
        """`save(..., answers=...)`: the requests' answers commit with their events."""
        if answers:
            insert_answers(curs, answers)
        super()._insert_events(curs, stored_events, **kwargs)

    def _fetch_ids_after_insert_events(
        self,
        curs: Cursor[DictRow],
        stored_events: Sequence[StoredEvent],
        *,
        progress: _Progress | None = None,
        **kwargs: Any,
    ) -> Sequence[int] | None:
        """The last step before the library sends COMMIT."""
        if progress is not None:
            progress.committing = True
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        crash_point("api.before_commit")  # inserted, inside the open transaction
        return ids


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
SELECT notification_id, originator_id, originator_version, topic, state
FROM scanned
WHERE topic = ANY(%s) OR notification_id = (SELECT max(notification_id) FROM scanned)
ORDER BY notification_id
"""


def select_notifications_of(
    recorder: ApplicationRecorder,
    topics: Collection[str],
    *,
    after: int,
    limit: int,
) -> Sequence[Notification]:
    """`ClubRecorder.select_notifications_of`; another recorder (the library's
    in-memory one) returns every notification and the caller skips the rest."""
    if isinstance(recorder, ClubRecorder):
        return recorder.select_notifications_of(topics, after=after, limit=limit)
    return recorder.select_notifications(
        start=after, limit=limit, inclusive_of_start=False
    )
