"""`club demo`: a lesson with students enrolled, so a newcomer has something to see.

The command is a client of the running API (`club up`, through api_client.py),
acting through tokens as clients do: a teacher schedules the lesson, each student
registers and enrolls itself with a token of its own, signed as `club token` signs
it, as the README's curl lines do (contract §4.1).

The builders above `run_demo` seed the data of the benchmarks and the tests through
the application directly: one place says what scheduling a lesson, registering a
student and enrolling take.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from application.club import ClubApplication
from application.commands import EnrollStudent, ScheduleLesson
from application.identity import Role
from application.ports import StudentDirectory
from domain.student import StudentProfile
from entrypoints.cli.api_client import (
    ApiClient,
    ApiRefusedError,
    ApiUnreachableError,
    api_base,
)
from entrypoints.cli.token import DEFAULT_TTL_S, signed
from entrypoints.config.container import Container
from entrypoints.config.settings import Settings

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


# -- the command: a client of the running API ------------------------------------

TEACHER = "demo-teacher"  # who schedules the demo's lesson (the roster is theirs)


def _token(settings: Settings, sub: str, role: Role) -> str:
    """As `club token --sub SUB --role ROLE` signs it: the roster line works an hour."""
    return signed(settings, sub=sub, roles=[role.value], ttl_s=DEFAULT_TTL_S)


def _demo_through(
    api: ApiClient, settings: Settings, students: int
) -> tuple[str, str, int]:
    """The lesson's id, its teacher's token and the seats taken, as the API says."""
    teacher = _token(settings, TEACHER, Role.TEACHER)
    starts = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    lesson = api.call(
        "POST",
        "/lessons",
        teacher,
        {
            "title": "Yoga",
            "capacity": max(students, 1),
            "starts_at": (starts + timedelta(days=7)).isoformat(),
            "price_cents": 0,
        },
        key=str(uuid4()),
    )
    lesson_id = str(lesson["lesson_id"])
    for n in range(1, students + 1):
        student_id = f"s-{uuid4().hex[:10]}"
        token = _token(settings, student_id, Role.STUDENT)
        profile = {"email": f"{student_id}@example.org", "name": f"Student {n}"}
        api.call("PUT", f"/students/{student_id}", token, profile)
        api.call(
            "POST",
            f"/lessons/{lesson_id}/enrollments",
            token,
            {"student_id": student_id},
            key=str(uuid4()),
        )
    seats = api.call("GET", f"/lessons/{lesson_id}", teacher)["seats_taken"]
    return lesson_id, teacher, int(seats)


def run_demo(settings: Settings, args: argparse.Namespace) -> int:
    api = ApiClient(api_base(settings))
    try:
        try:
            api.check_reachable()
        except ApiUnreachableError as e:
            why = f" ({e})" if str(e) else ""
            sys.stderr.write(
                f"club: no Club API answers at {api.base}{why}; start `club up` "
                "first (CLUB_HTTP_HOST and CLUB_HTTP_PORT say where it listens)\n"
            )
            return 2
        try:
            lesson_id, teacher, seats = _demo_through(api, settings, args.students)
        except ApiRefusedError as e:
            sys.stderr.write(f"club: demo stopped: {e}\n")
            return 1
    finally:
        api.close()
    sys.stdout.write(
        f"lesson {lesson_id}: {args.students} student(s) registered and enrolled, "
        f"{seats} seat(s) taken\n"
        f"  roster (its teacher, {TEACHER}): curl {api.base}/lessons/{lesson_id}/roster"
        f' -H "authorization: Bearer {teacher}"\n'
    )
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo", help="a lesson with students enrolled through the running API"
    )
    demo.add_argument(
        "--students",
        type=_student_count,
        default=3,
        metavar="N",
        help=f"how many students to enroll (0 to {MOST_STUDENTS}; default 3)",
    )
    demo.set_defaults(run=run_demo)
