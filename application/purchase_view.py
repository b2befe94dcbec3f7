"""What a student (or an operator) is told about a purchase: the truth, in words."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from domain.purchase import Purchase, Status


@attrs.frozen(kw_only=True)
class PurchaseView:
    purchase_id: UUID
    lesson_id: UUID
    student_id: str
    status: str
    price_cents: int
    hold_expires_at: datetime
    seat_held: bool
    payment_open: bool  # a charge was asked for and is not settled yet
    payment_id: str | None
    enrollment_id: UUID | None
    checks: int
    next_check_at: datetime | None
    refund_key: str | None
    refund_state: str | None  # pending / refunded
    review_reason: str | None
    review_owner: str | None
    offer_expires_at: datetime | None
    alternative_purchase_id: UUID | None
    next_step: str
    version: int


def view_of(purchase: Purchase) -> PurchaseView:
    refund_state = None
    if purchase.refund_key is not None:
        refund_state = "refunded" if purchase.refunded else "pending"
    return PurchaseView(
        purchase_id=purchase.id,
        lesson_id=purchase.lesson_id,
        student_id=purchase.student_id,
        status=str(purchase.status),
        price_cents=purchase.price_cents,
        hold_expires_at=purchase.hold_expires_at,
        seat_held=purchase.hold_active,
        payment_open=purchase.payment_open,
        payment_id=purchase.payment_id,
        enrollment_id=purchase.enrollment_id,
        checks=purchase.checks,
        next_check_at=purchase.next_check_at,
        refund_key=purchase.refund_key,
        refund_state=refund_state,
        review_reason=purchase.review_reason,
        review_owner=purchase.review_owner,
        offer_expires_at=purchase.offer_expires_at,
        alternative_purchase_id=purchase.alternative_purchase_id,
        next_step=next_step(purchase),
        version=purchase.version,
    )


def next_step(p: Purchase) -> str:  # noqa: PLR0911, PLR0912 - one sentence per state
    """One sentence: what happens next and when (never a promise not yet kept)."""
    s = p.status
    if s is Status.RESERVED:
        return (
            f"your seat is held until {p.hold_expires_at}; payment is being asked for"
        )
    if s is Status.PAYMENT_PENDING:
        return f"waiting for your payment; the seat is held until {p.hold_expires_at}"
    if s is Status.PAYMENT_CHECKING:
        return (
            f"we do not know yet whether your payment went through; the seat stays "
            f"held while {p.check_owner} checks again at {p.next_check_at}"
        )
    if s is Status.CAPTURED:
        return "payment received; access is being granted"
    if s is Status.CONFIRMED:
        return "paid; your seat is confirmed"
    if s is Status.DECLINED:
        return "the payment was declined; the seat was released"
    if s is Status.EXPIRED:
        if p.payment_open:
            return (
                "the hold expired and the seat was released; we still check whether "
                f"a payment went through (next at {p.next_check_at}), to refund it"
            )
        return "the hold expired and the seat was released; nothing was charged"
    if s is Status.ALTERNATIVE_OFFERED:
        return (
            "your payment arrived after the hold expired; choose another lesson "
            f"by {p.offer_expires_at}, or it is refunded then"
        )
    if s is Status.ALTERNATIVE_ACCEPTED:
        return f"your payment bought a seat in lesson {p.alternative_lesson_id}"
    if s is Status.REFUND_PENDING:
        return "a refund is on its way; the provider has not confirmed it yet"
    if s is Status.REFUNDED:
        return "refunded"
    if s is Status.CANCELLED:
        return "cancelled after a review; the seat was released, nothing was charged"
    return f"{p.review_owner} reviews this purchase by hand: {p.review_reason}"
