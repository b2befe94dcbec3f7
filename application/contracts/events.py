"""Published event types, one attrs class per event and schema version."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar
from uuid import UUID

import attrs

from application.contracts.purchase_events import PURCHASE_VERSIONS, PurchaseEvent
from application.contracts.rfc3339 import rfc3339


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
            "starts_at": rfc3339(self.starts_at),
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
class EnrollmentConfirmedV2:
    """v2 adds when the lesson starts, so a confirmation needs no second lookup.

    Optional: enrollments recorded before v2 did not keep it.
    """

    TYPE: ClassVar[str] = "EnrollmentConfirmed"
    VERSION: ClassVar[int] = 2

    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    lesson_starts_at: datetime | None

    def to_data(self) -> dict[str, Any]:
        starts = self.lesson_starts_at
        return {
            "enrollment_id": str(self.enrollment_id),
            "lesson_id": str(self.lesson_id),
            "student_id": self.student_id,
            "lesson_starts_at": None if starts is None else rfc3339(starts),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> EnrollmentConfirmedV2:
        starts = data["lesson_starts_at"]
        return cls(
            enrollment_id=UUID(data["enrollment_id"]),
            lesson_id=UUID(data["lesson_id"]),
            student_id=str(data["student_id"]),
            lesson_starts_at=None if starts is None else datetime.fromisoformat(starts),
        )

    @classmethod
    def upcast(cls, old: EnrollmentConfirmedV1) -> EnrollmentConfirmedV2:
        return cls(
            enrollment_id=old.enrollment_id,
            lesson_id=old.lesson_id,
            student_id=old.student_id,
            lesson_starts_at=None,
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


@attrs.frozen(kw_only=True)
class ExportRequestedV1:
    """A roster export was asked for: the export worker's job (heavy work)."""

    TYPE: ClassVar[str] = "ExportRequested"
    VERSION: ClassVar[int] = 1

    export_id: UUID
    lesson_id: UUID
    lesson_version: int
    requested_at: datetime

    def to_data(self) -> dict[str, Any]:
        return {
            "export_id": str(self.export_id),
            "lesson_id": str(self.lesson_id),
            "lesson_version": self.lesson_version,
            "requested_at": rfc3339(self.requested_at),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ExportRequestedV1:
        return cls(
            export_id=UUID(data["export_id"]),
            lesson_id=UUID(data["lesson_id"]),
            lesson_version=int(data["lesson_version"]),
            requested_at=datetime.fromisoformat(data["requested_at"]),
        )


# What consumers see: the current version of each event type.
CurrentEvent = (
    LessonScheduledV1
    | EnrollmentConfirmedV2
    | EnrollmentCancelledV1
    | ExportRequestedV1
    | PurchaseEvent
)
PublishedEvent = CurrentEvent | EnrollmentConfirmedV1

# Every (type, schema_version) ever published, and how to read it as current.
READERS: dict[tuple[str, int], Callable[[dict[str, Any]], CurrentEvent]] = {
    ("LessonScheduled", 1): LessonScheduledV1.from_data,
    ("EnrollmentConfirmed", 1): lambda data: EnrollmentConfirmedV2.upcast(
        EnrollmentConfirmedV1.from_data(data)
    ),
    ("EnrollmentConfirmed", 2): EnrollmentConfirmedV2.from_data,
    ("EnrollmentCancelled", 1): EnrollmentCancelledV1.from_data,
    ("ExportRequested", 1): ExportRequestedV1.from_data,
    **{(cls.TYPE, cls.VERSION): cls.from_data for cls in PURCHASE_VERSIONS},
}
EVERY_VERSION: tuple[type[PublishedEvent], ...] = (
    LessonScheduledV1,
    EnrollmentConfirmedV1,
    EnrollmentConfirmedV2,
    EnrollmentCancelledV1,
    ExportRequestedV1,
    *PURCHASE_VERSIONS,
)
