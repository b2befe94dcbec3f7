"""A notification as its store keeps it, and the request that opens one."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from application.notification_decision import State
from application.notification_kind import Kind


@attrs.frozen(kw_only=True)
class NotificationRequest:
    """What an event asks for: ids only (events carry no addresses or names)."""

    event_id: UUID
    kind: Kind
    enrollment_id: UUID  # for a purchase's e-mail: the seat it buys (PurchaseFacts)
    lesson_id: UUID
    student_id: str
    # An operator replayed it from the DLQ, and this is the replay's first
    # delivery: try afresh (adapters/nats/worker.py decides).
    replayed: bool = False
    amount_cents: int | None = None  # a purchase's e-mail: the money it is about


@attrs.frozen(kw_only=True)
class Notification:
    event_id: UUID
    kind: Kind
    enrollment_id: UUID
    state: State
    attempts: int = 0
    last_error: str | None = None
    sent_at: datetime | None = None
    # Since the row was created (the first send), on the database's clock: a
    # reading taken with the row, not part of its state, so not compared.
    age_s: float = attrs.field(default=0.0, eq=False)
