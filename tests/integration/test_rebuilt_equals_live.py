"""Property: a read model built live — redelivered, reordered, in any batches — equals
the same model rebuilt from the start of the event store."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.postgres.inbox import Delivery, apply_batch
from application.commands import CancelEnrollment, EnrollStudent, ScheduleLesson
from application.contracts.mapping import published_envelopes
from application.contracts.meaning import meaning_digest
from domain.errors import AlreadyEnrolledError, LessonFullError
from domain.student import StudentProfile
from projections import rosters, statistics

SHADOW = "property_rebuilt"
PROJECTIONS = [
    (statistics, statistics.lessons, statistics.lessons.c.lesson_id),
    (rosters, rosters.entries, rosters.entries.c.lesson_id),
]
LESSONS, STUDENTS = 3, 5
STARTS = datetime(2026, 12, 1, tzinfo=UTC)

# (kind, lesson, student); a cancel picks one of the seats held at that moment.
operations = st.lists(
    st.tuples(
        st.sampled_from(["enroll", "enroll", "cancel"]),
        st.integers(0, LESSONS - 1),
        st.integers(0, STUDENTS - 1),
    ),
    min_size=3,
    max_size=30,
)


@pytest.fixture(scope="module")
def shadow(container) -> str:
    with container.engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{SHADOW}"')
        for module, *_ in PROJECTIONS:
            module.metadata.create_all(
                conn.execution_options(schema_translate_map={None: SHADOW})
            )
    return SHADOW


def record_history(container, ops) -> tuple[list[UUID], list]:
    """Run the operations through the application; returns lessons and envelopes."""
    app = container.app
    start = app.recorder.max_notification_id() or 0
    lessons = [
        app.schedule_lesson(
            ScheduleLesson(
                lesson_id=uuid4(),
                title="P",
                capacity=3,
                starts_at=STARTS,
                price_cents=0,
            )
        )
        for _ in range(LESSONS)
    ]
    students = [f"p-{uuid4().hex[:8]}" for _ in range(STUDENTS)]
    for student in students:
        container.students.save(
            StudentProfile.create(student_id=student, email="p@e.org", name="P")
        )
    held: dict[tuple[int, int], UUID] = {}
    for kind, lesson, student in ops:
        if kind == "enroll":
            cmd = EnrollStudent(
                lesson_id=lessons[lesson],
                student_id=students[student],
                request_id=str(uuid4()),
            )
            with contextlib.suppress(LessonFullError, AlreadyEnrolledError):
                held[(lesson, student)] = app.enroll(cmd).enrollment_id
        elif held:  # a later enroll of the same pair is a re-enroll
            pair = sorted(held)[(lesson * STUDENTS + student) % len(held)]
            app.cancel_enrollment(CancelEnrollment(enrollment_id=held.pop(pair)))
    notifications = app.recorder.select_notifications(
        start=start, limit=10_000, inclusive_of_start=False
    )
    return lessons, published_envelopes(app.mapper, notifications)


def rows(conn, table, column, lessons) -> set[tuple]:
    return {tuple(r) for r in conn.execute(sa.select(table).where(column.in_(lessons)))}


@settings(
    max_examples=50,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=operations, data=st.data())
def test_live_with_redeliveries_and_interleavings_equals_rebuilt(
    container, shadow, ops, data
) -> None:
    lessons, envelopes = record_history(container, ops)
    # Live: any order across (and within) aggregates, some events delivered twice.
    repeats = data.draw(st.lists(st.sampled_from(envelopes), max_size=5))
    delivered = envelopes + repeats
    data.draw(st.randoms(use_true_random=False)).shuffle(delivered)
    batch = data.draw(st.integers(1, 8))
    consumer = f"live-{uuid4().hex[:8]}"
    for module, *_ in PROJECTIONS:
        for i in range(0, len(delivered), batch):
            chunk = [
                Delivery(e, meaning_digest(e), i + k + 1)
                for k, e in enumerate(delivered[i : i + batch])
            ]
            with container.engine.begin() as conn:
                name = f"{consumer}-{module.NAME}"
                assert apply_batch(conn, name, chunk, module.apply).conflicts == []
    # Rebuilt: the event store's order, each event once, into the shadow tables.
    # (An engine copy: Connection.execution_options() would change the connection.)
    shadow_engine = container.engine.execution_options(
        schema_translate_map={None: shadow}
    )
    with shadow_engine.begin() as conn:
        for module, *_ in PROJECTIONS:
            for envelope in envelopes:
                module.apply(conn, [envelope])
    with container.engine.connect() as live, shadow_engine.connect() as rebuilt:
        assert rows(live, *PROJECTIONS[0][1:], lessons)  # real rows are compared
        for _, table, column in PROJECTIONS:
            live_rows = rows(live, table, column, lessons)
            assert live_rows == rows(rebuilt, table, column, lessons)
