"""`ClubRecorder`'s insert: the answers and the events in one statement, its own
transaction: all of it commits, or none of it."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest
import sqlalchemy as sa
from eventsourcing.persistence import IntegrityError, ProgrammingError

from adapters.postgres.database import eventsourcing_env
from adapters.postgres.tables import request_answers
from application.club import ClubApplication
from application.idempotency import Answer, Request
from domain.enrollment import Enrollment
from domain.lesson import Lesson

CREATED = Answer(status_code=201, body={"seat": ["ü", 1]}, headers={"location": "/x"})


def keyed(key: str) -> Request:
    return Request(scope="POST /test", key=key, fingerprint="f" * 64)


def seat(lesson: Lesson, student_id: str) -> Enrollment:
    enrollment = Enrollment.confirm(
        enrollment_id=uuid4(), lesson_id=lesson.id, student_id=student_id,
        request_id=str(uuid4()), lesson_starts_at=lesson.starts_at,
    )  # fmt: skip
    lesson.take_seat(enrollment_id=enrollment.id, student_id=student_id)
    return enrollment


def new_lesson(app: ClubApplication) -> Lesson:
    lesson = Lesson.schedule(
        lesson_id=uuid4(), title="Insert", capacity=10, price_cents=0,
        starts_at=datetime(2027, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    app.save(lesson)
    return lesson


def answers_of(container, key: str) -> list[tuple[object, ...]]:
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(request_answers.c.status_code, request_answers.c.body).where(
                request_answers.c.key == key
            )
        )
        return [tuple(row) for row in rows]


def test_the_answers_and_the_events_commit_together(container) -> None:
    app = container.app
    lesson = new_lesson(app)
    enrollment = seat(lesson, "ann")
    key = str(uuid4())
    app.save(lesson, enrollment, answers=[(keyed(key), CREATED)])
    assert answers_of(container, key) == [(201, {"seat": ["ü", 1]})]
    assert app.get_enrollment(enrollment.id).student_id == "ann"
    assert app.get_lesson(lesson.id).seats == {enrollment.id: "ann"}


def test_a_key_answered_meanwhile_stores_none_of_the_events(container) -> None:
    app = container.app
    lesson = new_lesson(app)
    key = str(uuid4())
    app._answers().record([(keyed(key), CREATED)])  # a racing attempt's
    enrollment = seat(lesson, "bo")
    with pytest.raises(IntegrityError):
        app.save(lesson, enrollment, answers=[(keyed(key), CREATED)])
    assert app.get_lesson(lesson.id).seats == {}
    assert enrollment.id not in app.repository


def test_a_version_taken_meanwhile_stores_none_of_the_answers(container) -> None:
    app = container.app
    lesson = new_lesson(app)
    racing = app.repository.get(lesson.id)
    app.save(racing, seat(racing, "cy"))  # the other writer moves the lesson on
    key = str(uuid4())
    with pytest.raises(IntegrityError):
        app.save(lesson, seat(lesson, "di"), answers=[(keyed(key), CREATED)])
    assert answers_of(container, key) == []
    assert sorted(app.get_lesson(lesson.id).seats.values()) == ["cy"]


class _Unmigrated(ClubApplication):
    name = "Unmigrated"  # its table, type and insert function were never created


def test_an_unmigrated_store_names_the_command_that_fixes_it(
    container, migrated
) -> None:
    app = _Unmigrated(env=eventsourcing_env(migrated[0]))
    try:
        with pytest.raises(ProgrammingError, match="run `club migrate`"):
            app.save(new_lesson(container.app))
    finally:
        app.close()
