"""The Lesson aggregate: a capacity and the seats taken in it."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import AlreadyEnrolledError, InvalidLessonError, LessonFullError
from domain.text import single_line

MAX_CAPACITY = 10_000
MAX_TITLE_LENGTH = 200
# Cents fit a 32-bit integer column anywhere a price is copied to.
MAX_PRICE_CENTS = 100_000_000
# The start's year as written. Any time-zone shift moves it by less than a day, so
# the instant stays inside what both Python's `datetime` (years 1 to 9999) and
# PostgreSQL's `timestamptz` hold: a year-9999 start at -05:00 is year 10000 in UTC,
# which PostgreSQL stores and Python cannot load back (a roster failing for good).
EARLIEST_YEAR, LATEST_YEAR = 2000, 8999
# Real offsets run from -12:00 to +14:00; PostgreSQL refuses 16:00 and beyond (a
# roster row it cannot write).
MAX_UTC_OFFSET = timedelta(hours=14)


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
        title = single_line(title, field="title", max_length=MAX_TITLE_LENGTH)
        if not 0 < capacity <= MAX_CAPACITY:
            msg = f"capacity must be between 1 and {MAX_CAPACITY}"
            raise InvalidLessonError(msg)
        offset = starts_at.utcoffset()
        if offset is None:
            msg = "starts_at must carry a time zone"
            raise InvalidLessonError(msg)
        if abs(offset) > MAX_UTC_OFFSET:
            msg = f"starts_at's offset {offset} is beyond ±14:00"
            raise InvalidLessonError(msg)
        if not EARLIEST_YEAR <= starts_at.year <= LATEST_YEAR:
            msg = f"starts_at must be in the years {EARLIEST_YEAR} to {LATEST_YEAR}"
            raise InvalidLessonError(msg)
        if not 0 <= price_cents <= MAX_PRICE_CENTS:
            msg = f"price_cents must be between 0 and {MAX_PRICE_CENTS}"
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
