"""A lesson's turn across API processes: a transaction-scoped advisory lock.

Taken on a connection of its own before the group reads the lesson, given back
(rolled back: nothing is written on it) after the save commits, so the next
process's group reads the lesson as this one left it instead of losing the
version check and doing its work again. Waited for at most `wait_at_most`; past
that the group goes on without it — the version check still decides — so a
process whose database connection went silent cannot hold every other one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

import psycopg.errors
import sqlalchemy as sa
import structlog

log = structlog.get_logger()

# Advisory locks with two 32-bit keys, a key space apart from the one-key locks
# (consumers, migrations, trim): this class, then 32 bits of the lesson's id.
TURN_CLASS = 0x0C1B0001
_TAKE = sa.text(
    "SELECT set_config('lock_timeout', :wait, true), "
    "pg_advisory_xact_lock(:class_id, :lesson_key)"
)


class AdvisoryLessonTurns:
    def __init__(self, engine: sa.Engine, *, wait_at_most: float = 1.0) -> None:
        self._engine = engine
        self._wait = f"{max(1, int(wait_at_most * 1000))}ms"

    @contextmanager
    def turn(self, lesson_id: UUID) -> Iterator[object]:
        key = int.from_bytes(lesson_id.bytes[:4], signed=True)
        with self._engine.connect() as conn:
            conn.begin()
            try:
                conn.execute(
                    _TAKE,
                    {"wait": self._wait, "class_id": TURN_CLASS, "lesson_key": key},
                )
            except sa.exc.OperationalError as e:
                if not isinstance(e.orig, psycopg.errors.LockNotAvailable):
                    raise
                conn.rollback()
                log.warning("lesson.turn_waited_out", lesson_id=str(lesson_id))
                yield None
                return
            try:
                yield None
            finally:
                conn.rollback()  # gives the turn back
