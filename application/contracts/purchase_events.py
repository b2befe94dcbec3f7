"""The purchase saga's published events (subject `club.events.purchase.<Name>`).

Only ids, amounts and the deadlines a reader acts on: never an address or a name
(docs/events.md). Most purchase facts carry no student or lesson (the domain keeps
them once, on `Reserved`), so a reader that needs them looks the purchase up.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from uuid import UUID

import attrs

from application.contracts.rfc3339 import rfc3339


@attrs.frozen(kw_only=True)
class PurchaseReservedV1:
    """A seat is held for the student until `hold_expires_at`, at this price."""

    TYPE: ClassVar[str] = "PurchaseReserved"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    lesson_id: UUID
    student_id: str
    price_cents: int
    hold_expires_at: datetime

    def to_data(self) -> dict[str, Any]:
        return {
            "purchase_id": str(self.purchase_id),
            "lesson_id": str(self.lesson_id),
            "student_id": self.student_id,
            "price_cents": self.price_cents,
            "hold_expires_at": rfc3339(self.hold_expires_at),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> PurchaseReservedV1:
        return cls(
            purchase_id=UUID(data["purchase_id"]),
            lesson_id=UUID(data["lesson_id"]),
            student_id=str(data["student_id"]),
            price_cents=int(data["price_cents"]),
            hold_expires_at=datetime.fromisoformat(data["hold_expires_at"]),
        )


@attrs.frozen(kw_only=True)
class PaymentCapturedV1:
    """The provider took the money (late or not: the saga decides what follows)."""

    TYPE: ClassVar[str] = "PaymentCaptured"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    payment_id: str
    amount_cents: int

    def to_data(self) -> dict[str, Any]:
        return {
            "purchase_id": str(self.purchase_id),
            "payment_id": self.payment_id,
            "amount_cents": self.amount_cents,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> PaymentCapturedV1:
        return cls(
            purchase_id=UUID(data["purchase_id"]),
            payment_id=str(data["payment_id"]),
            amount_cents=int(data["amount_cents"]),
        )


@attrs.frozen(kw_only=True)
class PurchaseConfirmedV1:
    """Access granted: the held seat became this enrollment."""

    TYPE: ClassVar[str] = "PurchaseConfirmed"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    enrollment_id: UUID

    def to_data(self) -> dict[str, Any]:
        return {
            "purchase_id": str(self.purchase_id),
            "enrollment_id": str(self.enrollment_id),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> PurchaseConfirmedV1:
        return cls(
            purchase_id=UUID(data["purchase_id"]),
            enrollment_id=UUID(data["enrollment_id"]),
        )


@attrs.frozen(kw_only=True)
class HoldExpiredV1:
    """The hold ran out unpaid and the seat went back to the lesson."""

    TYPE: ClassVar[str] = "HoldExpired"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID

    def to_data(self) -> dict[str, Any]:
        return {"purchase_id": str(self.purchase_id)}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> HoldExpiredV1:
        return cls(purchase_id=UUID(data["purchase_id"]))


@attrs.frozen(kw_only=True)
class RefundRequestedV1:
    """The refund's intent is recorded; the provider has not confirmed it yet."""

    TYPE: ClassVar[str] = "RefundRequested"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    amount_cents: int

    def to_data(self) -> dict[str, Any]:
        return {"purchase_id": str(self.purchase_id), "amount_cents": self.amount_cents}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> RefundRequestedV1:
        return cls(
            purchase_id=UUID(data["purchase_id"]),
            amount_cents=int(data["amount_cents"]),
        )


@attrs.frozen(kw_only=True)
class RefundedV1:
    """The provider confirmed the refund (the amount is RefundRequested's)."""

    TYPE: ClassVar[str] = "Refunded"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    refund_id: str

    def to_data(self) -> dict[str, Any]:
        return {"purchase_id": str(self.purchase_id), "refund_id": self.refund_id}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> RefundedV1:
        return cls(
            purchase_id=UUID(data["purchase_id"]), refund_id=str(data["refund_id"])
        )


@attrs.frozen(kw_only=True)
class ManualReviewRequiredV1:
    """A person decides; the reason stays internal (it is free text)."""

    TYPE: ClassVar[str] = "ManualReviewRequired"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID

    def to_data(self) -> dict[str, Any]:
        return {"purchase_id": str(self.purchase_id)}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ManualReviewRequiredV1:
        return cls(purchase_id=UUID(data["purchase_id"]))


@attrs.frozen(kw_only=True)
class AlternativeOfferedV1:
    """Paid after the hold expired: refunded unless the student consents before
    `offer_expires_at` to a seat in another lesson."""

    TYPE: ClassVar[str] = "AlternativeOffered"
    VERSION: ClassVar[int] = 1

    purchase_id: UUID
    offer_expires_at: datetime

    def to_data(self) -> dict[str, Any]:
        return {
            "purchase_id": str(self.purchase_id),
            "offer_expires_at": rfc3339(self.offer_expires_at),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> AlternativeOfferedV1:
        return cls(
            purchase_id=UUID(data["purchase_id"]),
            offer_expires_at=datetime.fromisoformat(data["offer_expires_at"]),
        )


PurchaseEvent = (
    PurchaseReservedV1
    | PaymentCapturedV1
    | PurchaseConfirmedV1
    | HoldExpiredV1
    | RefundRequestedV1
    | RefundedV1
    | ManualReviewRequiredV1
    | AlternativeOfferedV1
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
)
