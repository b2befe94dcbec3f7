"""Rebuild throughput from the event store, beside the raw read of the log."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from uuid import uuid4

import sqlalchemy as sa

from adapters.postgres.recorder import select_notifications_of
from adapters.postgres.tables import inbox
from application.contracts.mapping import PUBLISHED_TOPICS
from domain.enrollment import Enrollment
from domain.lesson import Lesson
from entrypoints.runtime import bootstrap
from projections import statistics

PER_SAVE = 100  # enrollments saved per transaction while loading


def load_notifications(container: bootstrap.Container, notifications: int) -> None:
    """Fill the event store fast: many enrollments per save, 2 events each."""
    app = container.app
    written = 0
    while written < notifications:
        lesson = Lesson.schedule(
            lesson_id=uuid4(), title="Load", capacity=1000,
            starts_at=datetime(2027, 1, 1, tzinfo=UTC), price_cents=0,
        )  # fmt: skip
        written += 1
        for _ in range(1000 // PER_SAVE):
            enrollments = []
            for _ in range(PER_SAVE):
                enrollment_id = uuid4()
                student = f"l-{enrollment_id.hex[:10]}"
                lesson.take_seat(enrollment_id=enrollment_id, student_id=student)
                enrollments.append(
                    Enrollment.confirm(
                        enrollment_id=enrollment_id,
                        lesson_id=lesson.id,
                        student_id=student,
                        request_id=str(enrollment_id),
                        lesson_starts_at=lesson.starts_at,
                    )
                )
            app.save(lesson, *enrollments)
            written += 2 * PER_SAVE
            if written >= notifications:
                break


def rebuild_rate(container: bootstrap.Container, *, caught_up: bool) -> float:
    """One rebuild of `statistics`, whose live inbox holds a row for every event
    (`caught_up`: its consumer applied the log, as a running projector has; the
    first rebuild's switch leaves it so) or none (no consumer applied any: every
    event is digested and recorded in the shadow inbox)."""
    if not caught_up:
        with container.engine.begin() as conn:
            conn.execute(sa.delete(inbox).where(inbox.c.consumer == statistics.NAME))
    return bootstrap.build_rebuild(container, statistics.NAME).run().rate


def raw_read_rate(container: bootstrap.Container) -> float:
    """select_notifications in the rebuild's batch size, nothing else."""
    recorder = container.app.recorder
    start, position, count = time.perf_counter(), 0, 0
    while batch := recorder.select_notifications(
        start=position, limit=2000, inclusive_of_start=False
    ):
        count += len(batch)
        position = batch[-1].id
    return count / (time.perf_counter() - start)


def raw_published_read_rate(container: bootstrap.Container) -> float:
    """What the rebuild reads and nothing else: the published rows of the log,
    filtered by the server, in the rebuild's batch size; published events/s, the
    rebuild's own unit (the row above counts every notification)."""
    recorder = container.app.recorder
    start, position, count = time.perf_counter(), 0, 0
    while batch := select_notifications_of(
        recorder, PUBLISHED_TOPICS, after=position, limit=2000
    ):
        count += sum(1 for n in batch if n.topic in PUBLISHED_TOPICS)
        position = batch[-1].id
    return count / (time.perf_counter() - start)
