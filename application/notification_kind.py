"""What an e-mail is about: its kind, stored with its notification's row."""

from __future__ import annotations

import enum


class Kind(enum.StrEnum):
    CONFIRMATION = "confirmation"
    CANCELLATION = "cancellation"
    # The purchase saga's e-mails (docs/events.md §5: one per published event).
    PAYMENT_RECEIVED = "payment-received"
    ACCESS_GRANTED = "access-granted"
    HOLD_EXPIRED = "hold-expired"
    REFUNDED = "refunded"


PURCHASE_KINDS = frozenset(
    {Kind.PAYMENT_RECEIVED, Kind.ACCESS_GRANTED, Kind.HOLD_EXPIRED, Kind.REFUNDED}
)
