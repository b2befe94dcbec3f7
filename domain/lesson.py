"""The Lesson aggregate: a capacity, the seats taken in it and the seats held."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import attrs
from eventsourcing.domain import Aggregate, event

from domain.errors import (
    AlreadyEnrolledError,
    InvalidLessonError,
    LessonFullError,
    PaidLessonError,
    SeatNotHeldError,
)
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


@attrs.frozen(kw_only=True)
class SeatHold:
    """A seat kept for a purchase until its payment settles (or the hold expires)."""

    student_id: str
    until: datetime


class Lesson(Aggregate):
    """Guards the capacity rule: seats taken plus seats held never exceed capacity.

    A purchase's hold lives here, not on the purchase, so that it commits with the
    seat count in one save: two students can never both hold the last seat.
    """

    class Scheduled(Aggregate.Created):
        title: str
        capacity: int
        starts_at: datetime
        price_cents: int
        teacher_id: str | None  # v2: who scheduled it, and sees its roster

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["teacher_id"] = None  # not recorded before v2: an admin's lesson

    class SeatTaken(Aggregate.Event):
        enrollment_id: UUID
        student_id: str

    class SeatReleased(Aggregate.Event):
        enrollment_id: UUID

    class SeatHeld(Aggregate.Event):
        purchase_id: UUID
        student_id: str
        until: datetime

    class HoldReleased(Aggregate.Event):
        purchase_id: UUID

    class HoldConverted(Aggregate.Event):
        purchase_id: UUID
        enrollment_id: UUID

    @event(Scheduled)
    def __init__(
        self,
        id: UUID,  # the originator id, chosen by the caller
        *,
        title: str,
        capacity: int,
        starts_at: datetime,
        price_cents: int,
        teacher_id: str | None,
    ) -> None:
        self.title = title
        self.capacity = capacity
        self.starts_at = starts_at
        self.price_cents = price_cents
        self.teacher_id = teacher_id
        self.seats: dict[UUID, str] = {}
        self.holds: dict[UUID, SeatHold] = {}

    @classmethod
    def schedule(
        cls,
        *,
        lesson_id: UUID,
        title: str,
        capacity: int,
        starts_at: datetime,
        price_cents: int,
        teacher_id: str | None = None,
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
            teacher_id=teacher_id,
        )

    def __deepcopy__(self, memo: dict[int, object]) -> Lesson:
        """The repository's cache deep-copies a lesson on every read; a generic deep
        copy of a big seat map cost 5 ms at 1,000 seats (py-spy's top cost of an
        enrollment). Everything but the seat map and pending events is immutable."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.seats = dict(self.seats)
        clone.holds = dict(self.holds)  # its values are frozen
        clone._pending_events = list(self._pending_events)
        return clone

    @property
    def seats_taken(self) -> int:
        return len(self.seats)

    @property
    def seats_held(self) -> int:
        return len(self.holds)

    def holds_seat_for(self, student_id: str) -> bool:
        """A taken seat or a purchase's hold: either way the student has one."""
        return student_id in self.seats.values() or any(
            hold.student_id == student_id for hold in self.holds.values()
        )

    def take_seat(self, *, enrollment_id: UUID, student_id: str) -> None:
        """A free lesson's seat; a paid one's is held, paid for, then converted."""
        if self.price_cents > 0:
            msg = f"lesson {self.id} costs {self.price_cents} cents: buy a seat instead"
            raise PaidLessonError(msg)
        self._check_free_seat_for(student_id)
        self._take_seat(enrollment_id=enrollment_id, student_id=student_id)

    def hold_seat(self, *, purchase_id: UUID, student_id: str, until: datetime) -> None:
        """Keep a seat for a purchase; the saga releases or converts it."""
        self._check_free_seat_for(student_id)
        self._hold_seat(purchase_id=purchase_id, student_id=student_id, until=until)

    def release_hold(self, *, purchase_id: UUID) -> None:
        if purchase_id in self.holds:
            self._release_hold(purchase_id=purchase_id)

    def convert_hold(self, *, purchase_id: UUID, enrollment_id: UUID) -> None:
        """The held seat becomes a taken one: the count of seats does not move."""
        if purchase_id not in self.holds:
            msg = f"purchase {purchase_id} holds no seat in lesson {self.id}"
            raise SeatNotHeldError(msg)
        self._convert_hold(purchase_id=purchase_id, enrollment_id=enrollment_id)

    def _check_free_seat_for(self, student_id: str) -> None:
        if self.holds_seat_for(student_id):
            msg = f"student {student_id} already holds a seat in lesson {self.id}"
            raise AlreadyEnrolledError(msg)
        if self.seats_taken + self.seats_held >= self.capacity:
            msg = f"all {self.capacity} seats of lesson {self.id} are taken or held"
            raise LessonFullError(msg)

    def release_seat(self, *, enrollment_id: UUID) -> None:
        if enrollment_id in self.seats:
            self._release_seat(enrollment_id=enrollment_id)

    @event(SeatTaken)
    def _take_seat(self, enrollment_id: UUID, student_id: str) -> None:
        self.seats[enrollment_id] = student_id

    @event(SeatReleased)
    def _release_seat(self, enrollment_id: UUID) -> None:
        del self.seats[enrollment_id]

    @event(SeatHeld)
    def _hold_seat(self, purchase_id: UUID, student_id: str, until: datetime) -> None:
        self.holds[purchase_id] = SeatHold(student_id=student_id, until=until)

    @event(HoldReleased)
    def _release_hold(self, purchase_id: UUID) -> None:
        del self.holds[purchase_id]

    @event(HoldConverted)
    def _convert_hold(self, purchase_id: UUID, enrollment_id: UUID) -> None:
        self.seats[enrollment_id] = self.holds.pop(purchase_id).student_id
