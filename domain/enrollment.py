"""The Enrollment aggregate: one student's seat in one lesson, and its cancellation."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import EnrollmentCancelledError


class Enrollment(Aggregate):
    """A confirmed seat; `request_id` names the request that created it."""

    class Confirmed(Aggregate.Created):
        lesson_id: UUID
        student_id: str
        request_id: str
        lesson_starts_at: datetime | None  # v2: copied so notices need no lookup

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["lesson_starts_at"] = None  # not recorded before v2

    class Cancelled(Aggregate.Event):
        # Self-contained, so a consumer needs no state to know whose seat it was.
        lesson_id: UUID
        student_id: str
        reason: str

    @event(Confirmed)
    def __init__(
        self,
        id: UUID,  # the originator id, chosen by the caller
        lesson_id: UUID,
        student_id: str,
        request_id: str,
        lesson_starts_at: datetime | None,
    ) -> None:
        self.lesson_id = lesson_id
        self.student_id = student_id
        self.request_id = request_id
        self.lesson_starts_at = lesson_starts_at
        self.cancelled = False

    @classmethod
    def confirm(
        cls,
        *,
        enrollment_id: UUID,
        lesson_id: UUID,
        student_id: str,
        request_id: str,
        lesson_starts_at: datetime | None = None,
    ) -> Enrollment:
        return cls(
            id=enrollment_id,
            lesson_id=lesson_id,
            student_id=student_id,
            request_id=request_id,
            lesson_starts_at=lesson_starts_at,
        )

    @property
    def status(self) -> str:
        return "cancelled" if self.cancelled else "confirmed"

    def cancel(self, *, reason: str) -> None:
        if self.cancelled:
            msg = f"enrollment {self.id} is already cancelled"
            raise EnrollmentCancelledError(msg)
        self._cancel(
            lesson_id=self.lesson_id, student_id=self.student_id, reason=reason
        )

    @event(Cancelled)
    def _cancel(self, lesson_id: UUID, student_id: str, reason: str) -> None:
        self.cancelled = True
