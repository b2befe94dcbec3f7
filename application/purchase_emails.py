"""The purchase saga's e-mails: which events ask for one, and what each one says.

A purchase event carries only the purchase's id (docs/events.md §5), so its e-mail
starts as a `PurchaseNotice`; the notifier looks the purchase up (its student and
lesson) at send time, as it reads the student's address at send time.
"""

from __future__ import annotations

from uuid import UUID

import attrs

from application.contracts.purchase_events import (
    HoldExpiredV1,
    PaymentCapturedV1,
    PurchaseConfirmedV1,
    RefundedV1,
)
from application.notification_kind import Kind


@attrs.frozen(kw_only=True)
class PurchaseNotice:
    """A purchase event's e-mail before its student and lesson are known."""

    event_id: UUID
    kind: Kind
    purchase_id: UUID
    amount_cents: int | None = None  # what the event says was paid, if it says
    replayed: bool = False


@attrs.frozen(kw_only=True)
class PurchaseFacts:
    """What an e-mail needs of a purchase, read from the event store at send time."""

    student_id: str
    lesson_id: UUID
    seat_id: UUID  # the enrollment the purchase buys: the row the e-mail files under
    refund_cents: int


def purchase_notice(
    event: object, event_id: UUID, *, replayed: bool
) -> PurchaseNotice | None:
    """The e-mail a purchase event asks for, or None (reservations, refund intents,
    reviews and offers ask for none: the student sees them at GET /purchases)."""
    amount: int | None = None
    match event:
        case PaymentCapturedV1(purchase_id=pid, amount_cents=cents):
            kind, amount = Kind.PAYMENT_RECEIVED, cents
        case PurchaseConfirmedV1(purchase_id=pid):
            kind = Kind.ACCESS_GRANTED
        case HoldExpiredV1(purchase_id=pid):
            kind = Kind.HOLD_EXPIRED
        case RefundedV1(purchase_id=pid):
            kind = Kind.REFUNDED
        case _:
            return None
    return PurchaseNotice(
        event_id=event_id,
        kind=kind,
        purchase_id=pid,
        amount_cents=amount,
        replayed=replayed,
    )


def purchase_text(
    kind: Kind, title: str, when: str, amount_cents: int | None
) -> tuple[str, str]:
    """(subject, body) of a purchase e-mail, after the greeting."""
    amount = "" if amount_cents is None else f" of {format_cents(amount_cents)}"
    match kind:
        case Kind.PAYMENT_RECEIVED:
            return (
                f"Payment received: {title}",
                f"we received your payment{amount} for {title} on {when}.",
            )
        case Kind.ACCESS_GRANTED:
            return (
                f"Your seat is confirmed: {title}",
                f"your payment is settled and your seat in {title} on {when} is yours.",
            )
        case Kind.HOLD_EXPIRED:
            return (
                f"Your hold expired: {title}",
                f"the seat we held for you in {title} on {when} was released "
                "because no payment arrived in time. A payment that still arrives "
                "is refunded, or moved to a seat in another lesson if you ask.",
            )
        case Kind.REFUNDED:
            return (
                f"Refunded: {title}",
                f"your payment{amount} for {title} on {when} has been refunded.",
            )
    raise ValueError(f"{kind} is not a purchase e-mail")


def format_cents(cents: int) -> str:
    """Whole units and two decimals; the currency is the provider's."""
    return f"{cents // 100}.{cents % 100:02d}"
