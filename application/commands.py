"""What callers ask Club to do: imperative, immutable, validated at the edge."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class ScheduleLesson:
    lesson_id: UUID
    title: str
    capacity: int
    starts_at: datetime
    price_cents: int
    teacher_id: str | None = None  # the caller who schedules it (None: an admin's)


@attrs.frozen(kw_only=True)
class EnrollStudent:
    lesson_id: UUID
    student_id: str
    request_id: str  # the client's Idempotency-Key: recognises a retried commit


@attrs.frozen(kw_only=True)
class CancelEnrollment:
    enrollment_id: UUID
    reason: str = "cancelled by student"
    # When the student cancelled: a bought seat's refund is due from then.
    now: datetime = attrs.field(factory=lambda: datetime.now(UTC))


@attrs.frozen(kw_only=True)
class RequestExport:
    export_id: UUID
    lesson_id: UUID
    requested_at: datetime
