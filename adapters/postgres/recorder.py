"""The event store's recorder, with failures surfaced at once instead of retried."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import Cursor
from psycopg.rows import DictRow

from adapters.crash import crash_point

# The library retries a failed insert ten times; with a lock timeout that turns one
# stuck lock into a twenty-second hang. The caller (HTTP: 503 + Retry-After) decides.
_insert_once = PostgresApplicationRecorder.insert_events.__wrapped__  # type: ignore[attr-defined]


class ClubRecorder(PostgresApplicationRecorder):
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        result: Sequence[int] | None = _insert_once(self, stored_events, **kwargs)
        return result

    def _fetch_ids_after_insert_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        crash_point("api.before_commit")  # inserted, inside the open transaction
        return ids
