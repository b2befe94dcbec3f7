"""`ClubRecorder.select_notifications_of`: the published rows of a stretch of the log,
and its last row whatever its topic, read by the relay and the rebuild."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from adapters.postgres.recorder import ClubRecorder, select_notifications_of
from application.contracts.mapping import PUBLISHED_TOPICS
from domain.enrollment import Enrollment
from domain.lesson import Lesson


def _log_with_an_internal_tail(container) -> None:
    """Lessons with enrollments (a seat taken, then the confirmation), and last a
    seat released: internal, so the log ends on a row nobody publishes."""
    app = container.app
    for _ in range(3):
        lesson = Lesson.schedule(
            lesson_id=uuid4(), title="Tail", capacity=10, price_cents=0,
            starts_at=datetime(2027, 1, 1, tzinfo=UTC),
        )  # fmt: skip
        enrollments = []
        for n in range(4):
            enrollment = Enrollment.confirm(
                enrollment_id=uuid4(), lesson_id=lesson.id, student_id=f"s{n}",
                request_id=str(n), lesson_starts_at=lesson.starts_at,
            )  # fmt: skip
            lesson.take_seat(enrollment_id=enrollment.id, student_id=f"s{n}")
            enrollments.append(enrollment)
        app.save(lesson, *enrollments)
    lesson.release_seat(enrollment_id=enrollments[0].id)
    app.save(lesson)


def test_every_published_row_once_and_the_position_reaches_the_end(
    container,
) -> None:
    _log_with_an_internal_tail(container)
    recorder = container.app.recorder
    assert isinstance(recorder, ClubRecorder)
    everything = recorder.select_notifications(start=1, limit=10_000)
    assert everything[-1].topic not in PUBLISHED_TOPICS  # the internal tail

    for limit in (1, 2, 3, 5, 7, 1000):
        seen, position, reads = [], 0, 0
        while batch := recorder.select_notifications_of(
            PUBLISHED_TOPICS, after=position, limit=limit
        ):
            assert len(batch) <= limit
            # Only published rows, but for the last one of the stretch scanned.
            assert all(n.topic in PUBLISHED_TOPICS for n in batch[:-1])
            seen += [n for n in batch if n.topic in PUBLISHED_TOPICS]
            position = batch[-1].id
            reads += 1
        expected = [n for n in everything if n.topic in PUBLISHED_TOPICS]
        assert seen == expected, limit
        assert position == everything[-1].id, limit
        assert reads == -(-len(everything) // limit), limit  # a read per stretch


def test_the_rows_are_the_librarys(container) -> None:
    recorder = container.app.recorder
    everything = recorder.select_notifications(start=1, limit=10_000)
    assert everything  # the module's log, as the test above left it
    got = select_notifications_of(recorder, PUBLISHED_TOPICS, after=0, limit=10_000)
    by_id = {n.id: n for n in everything}
    assert got
    assert all(n == by_id[n.id] for n in got)
    assert all(type(n.state) is bytes for n in got)
