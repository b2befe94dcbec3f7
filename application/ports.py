"""What the application needs from the outside world, as protocols."""

from __future__ import annotations

from typing import Protocol

from domain.student import StudentProfile


class StudentDirectory(Protocol):
    """Where profiles live: mutable and erasable, unlike the event log."""

    def save(self, profile: StudentProfile) -> None: ...

    def get(self, student_id: str) -> StudentProfile | None: ...
