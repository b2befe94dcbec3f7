"""Published event types, one attrs class per event and schema version.

A version is its fields: `codec.py:PublishedContract` reads and writes every one of
them with msgspec, so adding a version is adding a class (and its stored example).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar
from uuid import UUID

import attrs

from application.contracts.codec import (
    AwareDatetime,
    PublishedContract,
    optional_published_time,
    published_time,
)
from application.contracts.purchase_events import PURCHASE_VERSIONS, PurchaseEvent


@attrs.frozen(kw_only=True)
class LessonScheduledV1(PublishedContract):
    TYPE: ClassVar[str] = "LessonScheduled"
    VERSION: ClassVar[int] = 1

    lesson_id: UUID
    title: str
    capacity: int
    starts_at: AwareDatetime = attrs.field(validator=published_time)
    price_cents: int


@attrs.frozen(kw_only=True)
class EnrollmentConfirmedV1(PublishedContract):
    TYPE: ClassVar[str] = "EnrollmentConfirmed"
    VERSION: ClassVar[int] = 1

    enrollment_id: UUID
    lesson_id: UUID
    student_id: str


@attrs.frozen(kw_only=True)
class EnrollmentConfirmedV2(PublishedContract):
    """v2 adds when the lesson starts, so a confirmation needs no second lookup.

    Optional: enrollments recorded before v2 did not keep it.
    """

    TYPE: ClassVar[str] = "EnrollmentConfirmed"
    VERSION: ClassVar[int] = 2

    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    lesson_starts_at: AwareDatetime | None = attrs.field(
        validator=optional_published_time
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
class EnrollmentCancelledV1(PublishedContract):
    TYPE: ClassVar[str] = "EnrollmentCancelled"
    VERSION: ClassVar[int] = 1

    enrollment_id: UUID
    lesson_id: UUID
    student_id: str


@attrs.frozen(kw_only=True)
class ExportRequestedV1(PublishedContract):
    """A roster export was asked for: the export worker's job (heavy work)."""

    TYPE: ClassVar[str] = "ExportRequested"
    VERSION: ClassVar[int] = 1

    export_id: UUID
    lesson_id: UUID
    lesson_version: int
    requested_at: AwareDatetime = attrs.field(validator=published_time)


def _confirmed_v1_as_v2(data: dict[str, Any]) -> EnrollmentConfirmedV2:
    return EnrollmentConfirmedV2.upcast(EnrollmentConfirmedV1.from_data(data))


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
    ("EnrollmentConfirmed", 1): _confirmed_v1_as_v2,
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
