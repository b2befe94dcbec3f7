"""The event store's recorder: fail fast and recover fast when the database restarts.

The library retries every call ten times, and its pool checks stale connections
one by one with a growing pause between them. After a restart every pooled
connection is dead, so one read could wait most of a minute and the pool took
longer still to come back. Here a connection error drops all stale connections
at once; a read is then tried once more, an insert never (the caller — HTTP:
503 + Retry-After — decides, and the Idempotency-Key recognises a commit whose
reply was lost).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from eventsourcing.persistence import (
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import Cursor
from psycopg.rows import DictRow

from adapters.crash import crash_point
from adapters.postgres.answers import insert_answers
from application.idempotency import Answer, Request

T = TypeVar("T")
CONNECTION_LOST = (InterfaceError, OperationalError)
_Base = PostgresApplicationRecorder


def _single(method: Callable[..., Any]) -> Callable[..., Any]:
    """The library method without its retry decorator."""
    return method.__wrapped__  # type: ignore[attr-defined,no-any-return]


class ClubRecorder(PostgresApplicationRecorder):
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        try:
            ids: Sequence[int] | None = _single(_Base.insert_events)(
                self, stored_events, **kwargs
            )
        except CONNECTION_LOST:
            self._drop_stale_connections()
            raise
        return ids

    def select_events(self, *args: Any, **kwargs: Any) -> Sequence[StoredEvent]:
        return self._read(_single(_Base.select_events), *args, **kwargs)

    def select_notifications(self, *args: Any, **kwargs: Any) -> Sequence[Notification]:
        return self._read(_single(_Base.select_notifications), *args, **kwargs)

    def max_notification_id(self) -> int | None:
        newest: int | None = self._read(_single(_Base.max_notification_id))
        return newest

    def _read(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except CONNECTION_LOST:
            self._drop_stale_connections()
            return method(self, *args, **kwargs)  # on a fresh connection

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
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        crash_point("api.before_commit")  # inserted, inside the open transaction
        return ids
