"""`club demo`: a lesson with students enrolled, so a newcomer has something to see.

The same builders seed the data of the benchmarks and the tests: one place says what
scheduling a lesson, registering a student and enrolling take.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from uuid import UUID, uuid4

from application.club import ClubApplication
from application.commands import EnrollStudent, ScheduleLesson
from application.ports import StudentDirectory
from domain.student import StudentProfile
from entrypoints.config.container import Container
from entrypoints.config.settings import Settings
from entrypoints.runtime import bootstrap

STARTS_AT = datetime(2026, 12, 1, 10, tzinfo=UTC)
MOST_STUDENTS = 1000  # a demo, not a load generator: bench/ drives load


def schedule_lesson(
    app: ClubApplication,
    *,
    capacity: int,
    title: str = "Yoga",
    starts_at: datetime = STARTS_AT,
    price_cents: int = 0,
) -> UUID:
    return app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(),
            title=title,
            capacity=capacity,
            starts_at=starts_at,
            price_cents=price_cents,
        )
    )


def register_students(
    directory: StudentDirectory,
    count: int,
    *,
    prefix: str = "s",
    domain: str = "example.org",
) -> list[str]:
    """`count` new profiles, each with an address of its own: `<id>@<domain>`."""
    ids = [f"{prefix}-{uuid4().hex[:10]}" for _ in range(count)]
    for student_id in ids:
        directory.save(
            StudentProfile.create(
                student_id=student_id, email=f"{student_id}@{domain}", name="Ann"
            )
        )
    return ids


def enroll_all(
    app: ClubApplication, lesson_id: UUID, students: Iterable[str]
) -> list[UUID]:
    """Each student into the lesson, one request each (the student id is its key)."""
    return [
        app.enroll(
            EnrollStudent(lesson_id=lesson_id, student_id=s, request_id=s)
        ).enrollment_id
        for s in students
    ]


def lesson_with_enrollments(container: Container, enrollments: int) -> UUID:
    """A lesson just large enough, with `enrollments` new students enrolled."""
    lesson_id = schedule_lesson(container.app, capacity=max(enrollments, 1))
    enroll_all(
        container.app, lesson_id, register_students(container.students, enrollments)
    )
    return lesson_id


def _student_count(raw: str) -> int:
    count = int(raw) if raw.isdigit() else -1
    if not 0 <= count <= MOST_STUDENTS:
        msg = f"give a whole number from 0 to {MOST_STUDENTS}, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return count


def run_demo(settings: Settings, args: argparse.Namespace) -> int:
    database_url, _ = settings.operator_services()
    bootstrap.migrate_database(database_url)  # safe again; a fresh database works too
    container = bootstrap.build(database_url, pool_size=1)
    try:
        lesson_id = lesson_with_enrollments(container, args.students)
    finally:
        container.close()
    sys.stdout.write(
        f"lesson {lesson_id}: {args.students} student(s) enrolled\n"
        f"  curl localhost:{settings.http_port}/lessons/{lesson_id} "
        '-H "authorization: Bearer $(club token --sub ops --role admin)"\n'
    )
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser("demo", help="a lesson with students enrolled, to look at")
    demo.add_argument(
        "--students",
        type=_student_count,
        default=3,
        metavar="N",
        help=f"how many students to enroll (0 to {MOST_STUDENTS}; default 3)",
    )
    demo.set_defaults(run=run_demo)
