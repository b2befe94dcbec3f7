"""The Lesson aggregate: a capacity and the seats taken in it."""

from __future__ import annotations

import copy
from datetime import datetime
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import AlreadyEnrolledError, InvalidLessonError, LessonFullError

MAX_CAPACITY = 10_000
MAX_TITLE_LENGTH = 200


class Lesson(Aggregate):
    """Guards the capacity rule: seats taken never exceed capacity."""

    class Scheduled(Aggregate.Created):
        title: str
        capacity: int
        starts_at: datetime
        price_cents: int

    class SeatTaken(Aggregate.Event):
        enrollment_id: UUID
        student_id: str

    class SeatReleased(Aggregate.Event):
        enrollment_id: UUID

    @event(Scheduled)
    def __init__(
        self,
        id: UUID,  # the originator id, chosen by the caller
        title: str,
        capacity: int,
        starts_at: datetime,
        price_cents: int,
    ) -> None:
        self.title = title
        self.capacity = capacity
        self.starts_at = starts_at
        self.price_cents = price_cents
        self.seats: dict[UUID, str] = {}

    @classmethod
    def schedule(
        cls,
        *,
        lesson_id: UUID,
        title: str,
        capacity: int,
        starts_at: datetime,
        price_cents: int,
    ) -> Lesson:
        title = title.strip()
        if not 0 < len(title) <= MAX_TITLE_LENGTH:
            msg = f"title must be 1 to {MAX_TITLE_LENGTH} characters"
            raise InvalidLessonError(msg)
        if not 0 < capacity <= MAX_CAPACITY:
            msg = f"capacity must be between 1 and {MAX_CAPACITY}"
            raise InvalidLessonError(msg)
        if starts_at.tzinfo is None:
            msg = "starts_at must carry a time zone"
            raise InvalidLessonError(msg)
        if price_cents < 0:
            msg = "price_cents must not be negative"
            raise InvalidLessonError(msg)
        return cls(
            id=lesson_id,
            title=title,
            capacity=capacity,
            starts_at=starts_at,
            price_cents=price_cents,
        )

    def __deepcopy__(self, memo: dict[int, object]) -> Lesson:
        """The repository's cache deep-copies a lesson on every read; a generic deep
        copy of a big seat map cost 5 ms at 1,000 seats (py-spy's top cost of an
        enrollment). Everything but the seat map and pending events is immutable."""
        clone = copy.copy(self)
        clone.seats = dict(self.seats)
        clone._pending_events = list(self._pending_events)
        return clone

    @property
    def seats_taken(self) -> int:
        return len(self.seats)

    def holds_seat_for(self, student_id: str) -> bool:
        return student_id in self.seats.values()

    def take_seat(self, *, enrollment_id: UUID, student_id: str) -> None:
        if self.holds_seat_for(student_id):
            msg = f"student {student_id} already holds a seat in lesson {self.id}"
            raise AlreadyEnrolledError(msg)
        if self.seats_taken >= self.capacity:
            msg = f"all {self.capacity} seats of lesson {self.id} are taken"
            raise LessonFullError(msg)
        self._take_seat(enrollment_id=enrollment_id, student_id=student_id)

    def release_seat(self, *, enrollment_id: UUID) -> None:
        if enrollment_id in self.seats:
            self._release_seat(enrollment_id=enrollment_id)

    @event(SeatTaken)
    def _take_seat(self, enrollment_id: UUID, student_id: str) -> None:
        self.seats[enrollment_id] = student_id

    @event(SeatReleased)
    def _release_seat(self, enrollment_id: UUID) -> None:
        del self.seats[enrollment_id]
