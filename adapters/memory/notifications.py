"""Notification states in a dict: the `NotificationStore` for unit tests."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import attrs

from application.notification_record import Notification, NotificationRequest
from application.notifications import State


class InMemoryNotificationStore:
    def __init__(self) -> None:
        self.rows: dict[UUID, Notification] = {}

    def open(self, request: NotificationRequest) -> Notification:
        return self.rows.setdefault(
            request.event_id,
            Notification(
                event_id=request.event_id,
                kind=request.kind,
                enrollment_id=request.enrollment_id,
                state=State.PENDING,
            ),
        )

    def open_sending(self, request: NotificationRequest) -> bool:
        if request.event_id in self.rows:
            return False
        self.rows[request.event_id] = Notification(
            event_id=request.event_id,
            kind=request.kind,
            enrollment_id=request.enrollment_id,
            state=State.SENDING,
            attempts=1,
        )
        return True

    def mark(
        self,
        event_id: UUID,
        state: State,
        *,
        attempts: int | None = None,
        error: str | None = None,
        provider_id: str | None = None,
    ) -> None:
        row = self.rows[event_id]
        if row.state is State.SENT:  # final: a stale worker never undoes it
            return
        self.rows[event_id] = attrs.evolve(
            row,
            state=state,
            attempts=row.attempts if attempts is None else attempts,
            last_error=row.last_error if error is None else error,
            sent_at=datetime.now(UTC) if state is State.SENT else row.sent_at,
        )

    def for_enrollment(self, enrollment_id: UUID) -> Notification | None:
        found = [n for n in self.rows.values() if n.enrollment_id == enrollment_id]
        return found[-1] if found else None
