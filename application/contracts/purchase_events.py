"""The purchase saga's published events (subject `club.events.purchase.<Name>`).

Only ids, amounts and the deadlines a reader acts on: never an address or a name
(docs/events.md). Most purchase facts carry no student or lesson (the domain keeps
them once, on `Reserved`), so a reader that needs them looks the purchase up.
Read and written by `codec.py:PublishedContract`, like every published version.
"""

from __future__ import annotations

from typing import ClassVar
from uuid import UUID

import attrs

from application.contracts.codec import (
    AwareDatetime,
    PublishedContract,
    published_time,
)


@attrs.frozen(kw_only=True)
class PurchaseReservedV1(PublishedContract):
    """A seat is held for the student until `hold_expires_at`, at this price."""

    TYPE: ClassVar[str] = "PurchaseReserved"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    lesson_id: UUID
    student_id: str
    price_cents: int
    hold_expires_at: AwareDatetime = attrs.field(validator=published_time)


@attrs.frozen(kw_only=True)
class PaymentCapturedV1(PublishedContract):
    """The provider took the money (late or not: the saga decides what follows)."""

    TYPE: ClassVar[str] = "PaymentCaptured"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    payment_id: str
    amount_cents: int


@attrs.frozen(kw_only=True)
class PurchaseConfirmedV1(PublishedContract):
    """Access granted: the held seat became this enrollment."""

    TYPE: ClassVar[str] = "PurchaseConfirmed"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    enrollment_id: UUID


@attrs.frozen(kw_only=True)
class HoldExpiredV1(PublishedContract):
    """The hold ran out unpaid and the seat went back to the lesson."""

    TYPE: ClassVar[str] = "HoldExpired"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID


@attrs.frozen(kw_only=True)
class RefundRequestedV1(PublishedContract):
    """The refund's intent is recorded; the provider has not confirmed it yet."""

    TYPE: ClassVar[str] = "RefundRequested"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    amount_cents: int


@attrs.frozen(kw_only=True)
class RefundedV1(PublishedContract):
    """The provider confirmed the refund (the amount is RefundRequested's)."""

    TYPE: ClassVar[str] = "Refunded"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    refund_id: str


@attrs.frozen(kw_only=True)
class ManualReviewRequiredV1(PublishedContract):
    """A person decides; the reason stays internal (it is free text)."""

    TYPE: ClassVar[str] = "ManualReviewRequired"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID


@attrs.frozen(kw_only=True)
class AlternativeOfferedV1(PublishedContract):
    """Paid after the hold expired: refunded unless the student consents before
    `offer_expires_at` to a seat in another lesson."""

    TYPE: ClassVar[str] = "AlternativeOffered"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    offer_expires_at: AwareDatetime = attrs.field(validator=published_time)


@attrs.frozen(kw_only=True)
class ReviewResolvedV1(PublishedContract):
    """An operator settled the purchase's review: `refund`, `confirm` or `cancel`
    (who and why stay internal). A refund or access follows as its own event."""

    TYPE: ClassVar[str] = "ReviewResolved"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    decision: str


PurchaseEvent = (
    PurchaseReservedV1
    | PaymentCapturedV1
    | PurchaseConfirmedV1
    | HoldExpiredV1
    | RefundRequestedV1
    | RefundedV1
    | ManualReviewRequiredV1
    | AlternativeOfferedV1
    | ReviewResolvedV1
)
PURCHASE_VERSIONS: tuple[type[PurchaseEvent], ...] = (
    PurchaseReservedV1,
    PaymentCapturedV1,
    PurchaseConfirmedV1,
    HoldExpiredV1,
    RefundRequestedV1,
    RefundedV1,
    ManualReviewRequiredV1,
    AlternativeOfferedV1,
    ReviewResolvedV1,
)
