"""Test data, built one way: the package's builders (`club demo` uses them too) and
the few shapes only tests need. HTTP tests build through `tests.api_client`."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

from application.club import ClubApplication
from application.commands import EnrollStudent, RequestExport
from domain.export import Export
from domain.student import StudentProfile
from entrypoints.cli.demo import (
    enroll_all,
    lesson_with_enrollments,
    register_students,
    schedule_lesson,
)

__all__ = [
    "enroll_all",
    "enroll_command",
    "export_requested",
    "lesson_with_enrollments",
    "profile",
    "register_students",
    "schedule_lesson",
]


def profile(student_id: str, name: str = "Ann") -> StudentProfile:
    """A valid profile for a student id a test names itself."""
    return StudentProfile.create(
        student_id=student_id, email=f"{student_id}@example.org", name=name
    )


def enroll_command(lesson_id: UUID, student_id: str, key: str) -> EnrollStudent:
    return EnrollStudent(lesson_id=lesson_id, student_id=student_id, request_id=key)


def export_requested(
    app: ClubApplication, lesson_id: UUID, requested_at: datetime | None = None
) -> Export:
    """A roster export asked for through the use case: now, unless `requested_at`."""
    return app.request_export(
        RequestExport(
            export_id=uuid4(),
            lesson_id=lesson_id,
            requested_at=requested_at or datetime.now(UTC),
        ),
    )
