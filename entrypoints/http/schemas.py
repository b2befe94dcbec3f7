"""HTTP request and response bodies; the domain never sees these.

Every rule the domain enforces on input is stated here too, so `/openapi.json` tells
a client (or a fuzzer) exactly what is accepted. Integers are JSON Schema's:
`5` and `5.0` are integers, `"5"`, `true` and `5.5` are not.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import Path
from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)

from domain.lesson import (
    EARLIEST_YEAR,
    LATEST_YEAR,
    MAX_CAPACITY,
    MAX_PRICE_CENTS,
    MAX_TITLE_LENGTH,
)
from domain.student import (
    EMAIL_PATTERN,
    MAX_EMAIL_LENGTH,
    MAX_NAME_LENGTH,
    MAX_STUDENT_ID_LENGTH,
    STUDENT_ID_PATTERN,
)
from domain.text import SINGLE_LINE_PATTERN

TEXT_RULE = (
    "Printable single-line text: no control character (U+0000-U+001F, "
    "U+007F-U+009F), no U+2028/U+2029, no unpaired surrogate. Stored NFC-normalised "
    "and trimmed; the length limit counts code points after that."
)
# RFC 3339 with an offset of at most 14 hours, and a year Club can store whatever
# the offset (see domain/lesson.py).
STARTS_AT_PATTERN = (
    r"^[2-8][0-9]{3}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
    r"([Zz]|[+-](0[0-9]|1[0-3]):[0-5][0-9]|[+-]14:00)$"
)
_STARTS_AT = re.compile(STARTS_AT_PATTERN)


def _json_integer(value: Any) -> Any:
    """pydantic would also take `"5"` and `true`; JSON Schema's `integer` does not."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = "must be a JSON integer"
        raise ValueError(msg)  # pydantic turns it into a 422 entry
    return value


Integer = Annotated[int, BeforeValidator(_json_integer)]


def _rfc3339_string(value: Any) -> Any:
    """pydantic would also take a number of seconds; the schema promises a string."""
    if not isinstance(value, str) or not _STARTS_AT.fullmatch(value):
        msg = (
            "starts_at must be an RFC 3339 date-time with an offset of at most "
            f"±14:00, in the years {EARLIEST_YEAR} to {LATEST_YEAR}, "
            "e.g. 2026-12-01T10:00:00Z"
        )
        raise ValueError(msg)  # pydantic turns it into a 422 entry
    return value


StartsAt = Annotated[
    AwareDatetime,
    BeforeValidator(_rfc3339_string),
    Field(
        description=f"When the lesson starts: years {EARLIEST_YEAR} to {LATEST_YEAR}, "
        "a UTC offset of at most ±14:00.",
        json_schema_extra={"pattern": STARTS_AT_PATTERN},
    ),
]
STUDENT_ID_RULE = "Letters, digits, '.', '_' or '-', starting with a letter or digit."
StudentId = Annotated[
    str,
    Field(
        pattern=STUDENT_ID_PATTERN,
        min_length=1,
        max_length=MAX_STUDENT_ID_LENGTH,
        description=STUDENT_ID_RULE,
    ),
]
# The same rule on the path of PUT /students/{student_id}.
StudentIdPath = Annotated[
    str,
    Path(
        pattern=STUDENT_ID_PATTERN,
        min_length=1,
        max_length=MAX_STUDENT_ID_LENGTH,
        description=STUDENT_ID_RULE,
    ),
]


def _single_line(max_length: int, description: str) -> Any:
    return Field(
        pattern=SINGLE_LINE_PATTERN,
        min_length=1,
        max_length=max_length,
        description=f"{description} {TEXT_RULE}",
    )


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudentIn(Body):
    email: str = Field(
        pattern=EMAIL_PATTERN,
        max_length=MAX_EMAIL_LENGTH,
        description="name@domain.tld: one '@', at most 64 characters before it, a "
        "dotted domain; no spaces or control characters (surrounding ones trimmed).",
    )
    name: str = _single_line(MAX_NAME_LENGTH, "The student's name.")


class StudentOut(BaseModel):
    student_id: str
    email: str
    name: str


class LessonIn(Body):
    title: str = _single_line(MAX_TITLE_LENGTH, "The lesson's title.")
    capacity: Integer = Field(ge=1, le=MAX_CAPACITY)
    starts_at: StartsAt
    price_cents: Integer = Field(
        ge=0, le=MAX_PRICE_CENTS, default=0, description="0 is a free lesson."
    )


class LessonOut(BaseModel):
    lesson_id: UUID
    title: str
    capacity: int
    seats_taken: int
    seats_held: int
    starts_at: datetime
    price_cents: int
    version: int


class EnrollmentIn(Body):
    student_id: StudentId


class NotificationOut(BaseModel):
    """The confirmation (or cancellation) e-mail's recorded state."""

    kind: str
    state: str = Field(
        description="pending, sending, sent, unknown (the provider's answer was lost; "
        "it is looked up before any resend), failed (a retry is scheduled) or "
        "dead-lettered (an operator owns it)"
    )
    attempts: int
    last_error: str | None
    sent_at: datetime | None


class EnrollmentOut(BaseModel):
    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    status: str
    notification: NotificationOut | None = Field(
        default=None, description="None until the notifications worker sees it"
    )


LAST_APPLIED_SEQ = Field(
    description="The highest CLUB_EVENTS stream sequence this read model has applied "
    "(the end of its latest committed batch). Not a watermark: an event with a lower "
    "sequence may still be on its way (redelivery, dead-letter pending).",
)


class RosterStudent(BaseModel):
    enrollment_id: str
    student_id: str
    enrolled_at: str | None


# A list's next page, or None on the last one (entrypoints/http/paging.py).
NEXT = Field(None, description="The next page's address; none on the last page.")


class RosterOut(BaseModel):
    lesson_id: str
    title: str
    last_applied_seq: int = LAST_APPLIED_SEQ
    students: list[RosterStudent]
    next: str | None = NEXT


class StatisticsTotals(BaseModel):
    lessons: int
    enrollments_confirmed: int
    enrollments_cancelled: int
    active_enrollments: int


class LessonStatistics(BaseModel):
    lesson_id: str
    title: str | None
    capacity: int | None
    enrollments_confirmed: int
    enrollments_cancelled: int
    active_enrollments: int


class StatisticsOut(BaseModel):
    last_applied_seq: int = LAST_APPLIED_SEQ
    totals: StatisticsTotals
    lessons: list[LessonStatistics]
    next: str | None = NEXT


class PurchaseIn(Body):
    student_id: StudentId


class AlternativeIn(Body):
    lesson_id: UUID = Field(description="Another lesson at the same price.")


class PurchaseOut(BaseModel):
    """Where a purchase stands, in fields and in words (`next_step`)."""

    purchase_id: UUID
    lesson_id: UUID
    student_id: str
    status: str = Field(
        description="reserved, payment_pending, payment_checking (outcome unknown), "
        "captured, confirmed, declined, expired, alternative_offered, "
        "alternative_accepted, refund_pending, refunded or manual_review"
    )
    price_cents: int
    hold_expires_at: datetime
    seat_held: bool
    payment_open: bool = Field(description="A charge was asked for, not settled yet.")
    payment_id: str | None
    enrollment_id: UUID | None
    checks: int
    next_check_at: datetime | None
    refund_state: str | None = Field(description="None, pending or refunded")
    review_reason: str | None
    review_owner: str | None
    offer_expires_at: datetime | None
    alternative_purchase_id: UUID | None
    next_step: str = Field(description="What happens next, and when, in words.")
    version: int


class WebhookOut(BaseModel):
    event_id: str
    outcome: str = Field(description="What the fact did, as first recorded.")
    duplicate: bool = Field(description="This event id was received before.")
