"""Rebuild a projection from the start of the event store, beside the live one.

1. Shadow tables are created in a schema of their own and filled from the event
   store's notification log (the source of truth; the stream may have been trimmed),
   batch by batch, while the live tables keep serving and the live consumer goes on.
   Every event applied that the live inbox holds no row of is recorded in a shadow
   inbox.
2. The switch is one transaction, serialised with the live consumer by its advisory
   lock: apply the tail that arrived meanwhile, copy the shadow inbox into the inbox
   (so the live consumer skips what the rebuild applied), and swap the tables.
3. The live consumer resumes from its own stream position: what it had applied is in
   the rebuilt tables; what it had not, it applies next. Nothing twice, nothing missed.

A stored event the projection cannot apply (a poison event: anything but a failure of
the connection) is skipped, logged and recorded in `rebuild_skips`; the rebuild goes
on. The switch waits for its locks at most `switch_lock_timeout` at a time: a long
reader of the live tables makes it roll back and try again later, instead of queueing
every other reader behind its pending DROP; after `switch_attempts` it gives up with
RebuildSwitchError, the live tables untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from uuid import UUID

import attrs
import psycopg.errors
import sqlalchemy as sa
import structlog
from eventsourcing.persistence import ApplicationRecorder, Mapper, Notification

from adapters.postgres.inbox import Apply, consumer_lock
from adapters.postgres.inbox_copy import copy_inbox_rows
from adapters.postgres.recorder import select_notifications_of
from adapters.postgres.skips import Skipped, record_skip
from adapters.reasons import describe
from adapters.transient import TRANSIENT, Backoff
from application.contracts.envelope import Envelope
from application.contracts.mapping import PUBLISHED_TOPICS, published_envelope
from application.contracts.meaning import meaning_digest

log = structlog.get_logger()

Progress = Callable[[int, int], None]  # (events done, events known)


class RebuildSwitchError(RuntimeError):
    """The switch could not take its locks: a long transaction holds the tables."""


@attrs.frozen
class RebuildReport:
    events: int
    seconds: float
    skipped: tuple[Skipped, ...] = ()

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


class Rebuild:
    def __init__(
        self,
        *,
        engine: sa.Engine,
        recorder: ApplicationRecorder,
        mapper: Mapper[UUID],
        name: str,
        metadata: sa.MetaData,
        apply: Apply,
        batch_size: int = 2000,
        switch_lock_timeout: float = 0.5,
        switch_attempts: int = 60,
    ) -> None:
        self._engine = engine
        self._recorder = recorder
        self._mapper = mapper
        self.name = name
        self._metadata = metadata
        self._apply = apply
        self._batch_size = batch_size
        self._switch_lock_timeout_ms = max(1, int(switch_lock_timeout * 1000))
        self._switch_attempts = switch_attempts
        self.shadow = f"rebuild_{name}"
        # Core statements through this engine land in the shadow schema; raw SQL
        # (exec_driver_sql) is untouched, which the switch uses for the live tables.
        self._shadow_engine = engine.execution_options(
            schema_translate_map={None: self.shadow}
        )
        self._position = 0
        self.events_applied = 0
        self.switch_retries = 0
        self._skipped: dict[int, Skipped] = {}

    @property
    def skipped(self) -> tuple[Skipped, ...]:
        return tuple(self._skipped.values())

    def run(self, progress: Progress | None = None) -> RebuildReport:
        started = time.perf_counter()
        self.build_shadow(progress)
        self._switch()
        seconds = time.perf_counter() - started
        return RebuildReport(self.events_applied, seconds, self.skipped)

    def build_shadow(self, progress: Progress | None = None) -> None:
        """Step 1 alone: the shadow tables filled to the log's end, not switched."""
        self._create_shadow()
        self._fill(progress or _quiet)

    def _create_shadow(self) -> None:
        with self._shadow_engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{self.shadow}" CASCADE')
            conn.exec_driver_sql(f'CREATE SCHEMA "{self.shadow}"')
            self._metadata.create_all(conn)
            conn.exec_driver_sql(
                f'CREATE TABLE "{self.shadow}".inbox (LIKE inbox INCLUDING ALL)'
            )

    def _fill(self, progress: Progress) -> None:
        """Batch after batch until the log's end, as a pipeline of three threads:
        the next batch is read while this one is mapped and the last one written,
        so PostgreSQL's reading and writing overlap this process's Python."""
        with (
            ThreadPoolExecutor(1, thread_name_prefix="rebuild-read") as reader,
            ThreadPoolExecutor(1, thread_name_prefix="rebuild-write") as writer,
        ):
            batch = self._next_notifications()
            written: Future[None] | None = None
            while batch:
                upcoming = reader.submit(self._notifications_after, batch[-1].id)
                published = self._published(batch)
                if written is not None:
                    written.result()  # one batch in writing at a time, in order
                written = writer.submit(self._write_batch, batch, published, progress)
                batch = upcoming.result()
            if written is not None:
                written.result()

    def _write_batch(
        self,
        notifications: Sequence[Notification],
        published: Sequence[tuple[int, Envelope]],
        progress: Progress,
    ) -> None:
        with self._shadow_engine.begin() as conn:
            # A crash loses the shadow anyway (the next run starts it afresh), and
            # the switch commits durably, flushing every batch before it: a batch
            # need not wait for its own flush.
            conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
            self._apply_in_shadow(conn, notifications, published)
        if progress is not _quiet:
            newest = self._recorder.max_notification_id() or self._position
            progress(self._position, newest)

    def _next_notifications(self) -> Sequence[Notification]:
        """The published rows of the next stretch of the log, and its last row:
        the rest is seat bookkeeping, which the server leaves out."""
        return self._notifications_after(self._position)

    def _notifications_after(self, position: int) -> Sequence[Notification]:
        return select_notifications_of(
            self._recorder, PUBLISHED_TOPICS, after=position, limit=self._batch_size
        )

    def _apply_in_shadow(
        self,
        conn: sa.Connection,
        notifications: Sequence[Notification],
        published: Sequence[tuple[int, Envelope]],
    ) -> None:
        if not published:  # seat bookkeeping only
            self._position = notifications[-1].id
            return
        try:
            with conn.begin_nested():
                self._apply_published(conn, published)
        except TRANSIENT:
            raise
        except Exception:  # some event is poison: apply them one by one
            for one in published:
                try:
                    with conn.begin_nested():
                        self._apply_published(conn, [one])
                except TRANSIENT:
                    raise
                except Exception as e:
                    self._skip(one[0], one[1].event_id, e)
        self._position = notifications[-1].id

    def _apply_published(
        self, conn: sa.Connection, published: Sequence[tuple[int, Envelope]]
    ) -> None:
        envelopes = [envelope for _, envelope in published]
        if envelopes:
            self._apply(conn, envelopes)
            rows = [
                _inbox_row(e) for e in _not_in_live_inbox(conn, self.name, envelopes)
            ]
            copy_inbox_rows(conn, self.shadow, self.name, rows)
            self.events_applied += len(envelopes)

    def _published(
        self, notifications: Sequence[Notification]
    ) -> list[tuple[int, Envelope]]:
        """(notification id, envelope) of each published event; what cannot be
        mapped from the store is skipped like a poison event."""
        published = []
        for notification in notifications:
            try:
                envelope = published_envelope(self._mapper, notification)
            except TRANSIENT:
                raise
            except Exception as e:
                self._skip(notification.id, None, e)
                continue
            if envelope is not None:
                published.append((notification.id, envelope))
        return published

    def _skip(
        self, notification_id: int, event_id: UUID | None, error: Exception
    ) -> None:
        """Report and record a poison event; the rebuild goes on without it."""
        skipped = Skipped(notification_id, event_id, describe(error))
        self._skipped[notification_id] = skipped
        log.error(
            "rebuild.skipped_poison_event",
            projection=self.name,
            notification_id=notification_id,
            event_id=str(event_id),
            reason=skipped.reason,
        )
        record_skip(self._engine, self.name, skipped)  # live schema, own commit

    def _switch(self) -> None:
        backoff = Backoff(first=0.2, cap=2.0)
        for _ in range(self._switch_attempts):
            position, applied = self._position, self.events_applied
            try:
                self._switch_once()
            except sa.exc.OperationalError as e:
                if not isinstance(e.orig, psycopg.errors.LockNotAvailable):
                    raise
                # Rolled back: the tail it applied in the shadow is gone too.
                self._position, self.events_applied = position, applied
                self.switch_retries += 1
                log.warning(
                    "rebuild.switch_waiting_for_locks",
                    projection=self.name,
                    attempt=self.switch_retries,
                )
                time.sleep(backoff.next_delay())
            else:
                return
        msg = (
            f"the switch to the rebuilt {self.name} tables could not take its locks "
            f"in {self._switch_attempts} attempts: a long transaction holds them "
            "(see pg_stat_activity); end it and run the rebuild again"
        )
        raise RebuildSwitchError(msg)

    def _switch_once(self) -> None:
        with self._shadow_engine.begin() as conn:
            # Waiting longer would queue every reader of the live tables behind us.
            conn.exec_driver_sql(
                f"SET LOCAL lock_timeout = {self._switch_lock_timeout_ms}"
            )
            consumer_lock(conn, self.name)  # the live consumer waits from here
            while tail := self._next_notifications():
                self._apply_in_shadow(conn, tail, self._published(tail))
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


def _not_in_live_inbox(
    conn: sa.Connection, consumer: str, envelopes: Sequence[Envelope]
) -> list[Envelope]:
    """The envelopes the live inbox holds no row of: only these need one from the
    rebuild. A row found here is still there at the switch, or its event is refused
    live anyway: retention alone deletes rows, and moves the consumer's horizon past
    them first. A projection whose consumer is caught up needs next to none, and
    skips the meaning digest and the copy of every other event."""
    missing = conn.exec_driver_sql(
        "SELECT batch.i FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS batch(id, i) "
        "WHERE NOT EXISTS (SELECT FROM inbox "
        "WHERE consumer = %(consumer)s AND event_id = batch.id)",
        {"ids": [e.event_id for e in envelopes], "consumer": consumer},
    ).scalars()
    return [envelopes[i - 1] for i in missing]


def _inbox_row(envelope: Envelope) -> tuple[UUID, bytes, int]:
    # The meaning digest, as the live consumer computes it from any copy it
    # receives (v1 or v2): it sees a duplicate, not a conflict.
    # Stream seq 0: applied from the event store, not from the stream.
    return envelope.event_id, meaning_digest(envelope), 0


def _quiet(done: int, total: int) -> None:
    pass
