"""Published event types, one attrs class per event and schema version."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class LessonScheduledV1:
    TYPE: ClassVar[str] = "LessonScheduled"
    VERSION: ClassVar[int] = 1

    lesson_id: UUID
    title: str
    capacity: int
    starts_at: datetime
    price_cents: int

    def to_data(self) -> dict[str, Any]:
        return {
            "lesson_id": str(self.lesson_id),
            "title": self.title,
            "capacity": self.capacity,
            "starts_at": self.starts_at.isoformat().replace("+00:00", "Z"),
            "price_cents": self.price_cents,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> LessonScheduledV1:
        return cls(
            lesson_id=UUID(data["lesson_id"]),
            title=str(data["title"]),
            capacity=int(data["capacity"]),
            starts_at=datetime.fromisoformat(data["starts_at"]),
            price_cents=int(data["price_cents"]),
        )


@attrs.frozen(kw_only=True)
class EnrollmentConfirmedV1:
    TYPE: ClassVar[str] = "EnrollmentConfirmed"
    VERSION: ClassVar[int] = 1

    enrollment_id: UUID
    lesson_id: UUID
    student_id: str

    def to_data(self) -> dict[str, Any]:
        return {
            "enrollment_id": str(self.enrollment_id),
            "lesson_id": str(self.lesson_id),
            "student_id": self.student_id,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> EnrollmentConfirmedV1:
        return cls(
            enrollment_id=UUID(data["enrollment_id"]),
            lesson_id=UUID(data["lesson_id"]),
            student_id=str(data["student_id"]),
        )


@attrs.frozen(kw_only=True)
class EnrollmentCancelledV1:
    TYPE: ClassVar[str] = "EnrollmentCancelled"
    VERSION: ClassVar[int] = 1

    enrollment_id: UUID
    lesson_id: UUID
    student_id: str

    def to_data(self) -> dict[str, Any]:
        return {
            "enrollment_id": str(self.enrollment_id),
            "lesson_id": str(self.lesson_id),
            "student_id": self.student_id,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> EnrollmentCancelledV1:
        return cls(
            enrollment_id=UUID(data["enrollment_id"]),
            lesson_id=UUID(data["lesson_id"]),
            student_id=str(data["student_id"]),
        )


PublishedEvent = LessonScheduledV1 | EnrollmentConfirmedV1 | EnrollmentCancelledV1

# Every (type, schema_version) ever published, so a consumer can read each one.
KNOWN: dict[tuple[str, int], type[PublishedEvent]] = {
    (cls.TYPE, cls.VERSION): cls
    for cls in (LessonScheduledV1, EnrollmentConfirmedV1, EnrollmentCancelledV1)
}
