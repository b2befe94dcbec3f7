"""Notification states in PostgreSQL (the `NotificationStore` port).

Each `mark` is its own short transaction: a state must be durable before the next
step (the provider call, the ack) so that a worker killed in between leaves the
truth behind for the next delivery.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.crash import crash_point
from adapters.postgres.tables import notifications as table
from adapters.reasons import one_line
from application.notifications import (
    Kind,
    Notification,
    NotificationRequest,
    State,
)


class SqlNotificationStore:
    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def open(self, request: NotificationRequest) -> Notification:
        with self._engine.begin() as conn:
            conn.execute(
                insert(table)
                .values(
                    event_id=request.event_id,
                    kind=request.kind.value,
                    enrollment_id=request.enrollment_id,
                    student_id=request.student_id,
                    state=State.PENDING.value,
                )
                .on_conflict_do_nothing()
            )
            row = conn.execute(
                sa.select(table).where(table.c.event_id == request.event_id)
            ).one()
        return _notification(row)

    def mark(
        self,
        event_id: UUID,
        state: State,
        *,
        attempts: int | None = None,
        error: str | None = None,
        provider_id: str | None = None,
    ) -> None:
        values: dict[str, Any] = {"state": state.value, "updated_at": sa.func.now()}
        if attempts is not None:
            values["attempts"] = attempts
        if error is not None:
            values["last_error"] = one_line(error)
        if provider_id is not None:
            values["provider_id"] = one_line(provider_id)
        if state is State.SENT:
            values["sent_at"] = sa.func.now()
            crash_point("worker.after_accept")  # accepted; the state not yet saved
        with self._engine.begin() as conn:
            conn.execute(
                sa.update(table).where(table.c.event_id == event_id).values(**values)
            )

    def for_enrollment(self, enrollment_id: UUID) -> Notification | None:
        """The latest notification about an enrollment (its cancellation, if any)."""
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(table)
                .where(table.c.enrollment_id == enrollment_id)
                .order_by(table.c.created_at.desc())
                .limit(1)
            ).one_or_none()
        return None if row is None else _notification(row)


def _notification(row: sa.Row[Any]) -> Notification:
    return Notification(
        event_id=row.event_id,
        kind=Kind(row.kind),
        enrollment_id=row.enrollment_id,
        state=State(row.state),
        attempts=row.attempts,
        last_error=row.last_error,
        sent_at=row.sent_at,
    )
