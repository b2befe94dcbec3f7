"""Student profiles in a dict: the `StudentDirectory` for unit tests and demos."""

from __future__ import annotations

from domain.student import StudentProfile


class InMemoryStudentDirectory:
    def __init__(self) -> None:
        self._profiles: dict[str, StudentProfile] = {}

    def save(self, profile: StudentProfile) -> None:
        self._profiles[profile.student_id] = profile

    def get(self, student_id: str) -> StudentProfile | None:
        return self._profiles.get(student_id)
