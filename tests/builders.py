"""Test data, built one way: the package's builders (`club demo` uses them too) and
the few shapes only tests need. HTTP tests build through `tests.api_client`."""

from __future__ import annotations

from uuid import UUID

from application.commands import EnrollStudent
from domain.student import StudentProfile
from entrypoints.demo import (
    enroll_all,
    lesson_with_enrollments,
    register_students,
    schedule_lesson,
)

__all__ = [
    "enroll_all",
    "enroll_command",
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
