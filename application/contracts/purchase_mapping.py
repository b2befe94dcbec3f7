"""The purchase saga's rows of the mapping table: internal event -> published v1.

Kept beside `mapping.py` (which merges them into `PUBLISHED` under the subject
token `purchase`) so that file stays one table. The saga's bookkeeping (payment
requested, checks scheduled, retries, the refund's acceptance) stays internal:
no reader acts on it, and GET /purchases/{id} shows it from the event store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from application.contracts.purchase_events import (
    AlternativeOfferedV1,
    HoldExpiredV1,
    ManualReviewRequiredV1,
    PaymentCapturedV1,
    PurchaseConfirmedV1,
    PurchaseEvent,
    PurchaseReservedV1,
    RefundedV1,
    RefundRequestedV1,
    ReviewResolvedV1,
)
from domain.purchase import Purchase


def _reserved(e: Purchase.Reserved) -> PurchaseReservedV1:
    return PurchaseReservedV1(
        purchase_id=e.originator_id,
        lesson_id=e.lesson_id,
        student_id=e.student_id,
        price_cents=e.price_cents,
        hold_expires_at=e.hold_expires_at,
    )


def _captured(e: Purchase.PaymentCaptured) -> PaymentCapturedV1:
    return PaymentCapturedV1(
        purchase_id=e.originator_id,
        payment_id=e.payment_id,
        amount_cents=e.amount_cents,
    )


def _confirmed(e: Purchase.AccessGranted) -> PurchaseConfirmedV1:
    return PurchaseConfirmedV1(
        purchase_id=e.originator_id, enrollment_id=e.enrollment_id
    )


def _hold_expired(e: Purchase.HoldExpired) -> HoldExpiredV1:
    return HoldExpiredV1(purchase_id=e.originator_id)


def _refund_requested(e: Purchase.RefundRequested) -> RefundRequestedV1:
    return RefundRequestedV1(purchase_id=e.originator_id, amount_cents=e.amount_cents)


def _refunded(e: Purchase.Refunded) -> RefundedV1:
    return RefundedV1(purchase_id=e.originator_id, refund_id=e.refund_id)


def _review(e: Purchase.ManualReviewRequired) -> ManualReviewRequiredV1:
    return ManualReviewRequiredV1(purchase_id=e.originator_id)


def _resolved(e: Purchase.ReviewResolved) -> ReviewResolvedV1:
    return ReviewResolvedV1(purchase_id=e.originator_id, decision=e.decision)


def _offered(e: Purchase.AlternativeOffered) -> AlternativeOfferedV1:
    return AlternativeOfferedV1(
        purchase_id=e.originator_id, offer_expires_at=e.offer_expires_at
    )


PURCHASE_PUBLISHED: dict[type[Any], Callable[[Any], PurchaseEvent]] = {
    Purchase.Reserved: _reserved,
    Purchase.PaymentCaptured: _captured,
    Purchase.AccessGranted: _confirmed,
    Purchase.HoldExpired: _hold_expired,
    Purchase.RefundRequested: _refund_requested,
    Purchase.Refunded: _refunded,
    Purchase.ManualReviewRequired: _review,
    Purchase.AlternativeOffered: _offered,
    Purchase.ReviewResolved: _resolved,
}
