"""Rebuild a projection from the start of the event store, beside the live one.

1. Shadow tables are created in a schema of their own and filled from the event
   store's notification log (the source of truth; the stream may have been trimmed),
   batch by batch, while the live tables keep serving and the live consumer goes on.
   Every event applied is recorded in a shadow inbox.
2. The switch is one transaction, serialised with the live consumer by its advisory
   lock: apply the tail that arrived meanwhile, copy the shadow inbox into the inbox
   (so the live consumer skips what the rebuild applied), and swap the tables.
3. The live consumer resumes from its own stream position: what it had applied is in
   the rebuilt tables; what it had not, it applies next. Nothing twice, nothing missed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from uuid import UUID

import attrs
import sqlalchemy as sa
from eventsourcing.persistence import ApplicationRecorder, Mapper, Notification

from adapters.postgres.inbox import Apply, consumer_lock, insert_new
from application.contracts.envelope import Envelope
from application.contracts.mapping import published_envelopes

Progress = Callable[[int, int], None]  # (events done, events known)


@attrs.frozen
class RebuildReport:
    events: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


class Rebuild:
    def __init__(
        self,
        *,
        engine: sa.Engine,
        recorder: ApplicationRecorder,
        mapper: Mapper,
        name: str,
        metadata: sa.MetaData,
        apply: Apply,
        batch_size: int = 2000,
    ) -> None:
        self._engine = engine
        self._recorder = recorder
        self._mapper = mapper
        self.name = name
        self._metadata = metadata
        self._apply = apply
        self._batch_size = batch_size
        self.shadow = f"rebuild_{name}"
        # Core statements through this engine land in the shadow schema; raw SQL
        # (exec_driver_sql) is untouched, which the switch uses for the live tables.
        self._shadow_engine = engine.execution_options(
            schema_translate_map={None: self.shadow}
        )
        self._position = 0
        self.events_applied = 0

    def run(self, progress: Progress | None = None) -> RebuildReport:
        started = time.perf_counter()
        self._create_shadow()
        while self._catch_up_one_batch(progress or _quiet):
            pass
        self._switch()
        return RebuildReport(self.events_applied, time.perf_counter() - started)

    def _create_shadow(self) -> None:
        with self._shadow_engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{self.shadow}" CASCADE')
            conn.exec_driver_sql(f'CREATE SCHEMA "{self.shadow}"')
            self._metadata.create_all(conn)
            conn.exec_driver_sql(
                f'CREATE TABLE "{self.shadow}".inbox (LIKE inbox INCLUDING ALL)'
            )

    def _catch_up_one_batch(self, progress: Progress) -> bool:
        notifications = self._recorder.select_notifications(
            start=self._position, limit=self._batch_size, inclusive_of_start=False
        )
        if not notifications:
            return False
        with self._shadow_engine.begin() as conn:
            self._apply_in_shadow(conn, notifications)
        newest = self._recorder.max_notification_id() or self._position
        progress(self._position, newest)
        return True

    def _apply_in_shadow(
        self, conn: sa.Connection, notifications: Sequence[Notification]
    ) -> None:
        envelopes = published_envelopes(self._mapper, notifications)
        if envelopes:
            self._apply(conn, envelopes)
            # The shadow engine puts this into the shadow schema's inbox.
            insert_new(conn, self.name, [_inbox_row(e) for e in envelopes])
            self.events_applied += len(envelopes)
        self._position = notifications[-1].id

    def _switch(self) -> None:
        with self._shadow_engine.begin() as conn:
            consumer_lock(conn, self.name)  # the live consumer waits from here
            while tail := self._recorder.select_notifications(
                start=self._position, limit=self._batch_size, inclusive_of_start=False
            ):
                self._apply_in_shadow(conn, tail)
            conn.exec_driver_sql(
                f'INSERT INTO inbox SELECT * FROM "{self.shadow}".inbox '  # noqa: S608 - our names
                "ON CONFLICT DO NOTHING"
            )
            live_schema = conn.exec_driver_sql("SELECT current_schema()").scalar_one()
            for table in self._metadata.sorted_tables:
                conn.exec_driver_sql(f'DROP TABLE "{live_schema}"."{table.name}"')
                conn.exec_driver_sql(
                    f'ALTER TABLE "{self.shadow}"."{table.name}" '
                    f'SET SCHEMA "{live_schema}"'
                )
            conn.exec_driver_sql(f'DROP SCHEMA "{self.shadow}" CASCADE')


def _inbox_row(envelope: Envelope) -> tuple[UUID, bytes, int]:
    # The body the relay publishes is deterministic, so this hash equals the hash of
    # the message the live consumer would receive: it sees a duplicate, not a conflict.
    # Stream seq 0: applied from the event store, not from the stream.
    return envelope.event_id, hashlib.sha256(envelope.to_json()).digest(), 0


def _quiet(done: int, total: int) -> None:
    pass
