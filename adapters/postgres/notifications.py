"""Notification states in PostgreSQL (the `NotificationStore` port).

Each `mark` is its own short transaction: a state must be durable before the next
step (the provider call, the ack) so that a worker killed in between leaves the
truth behind for the next delivery.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import Insert, insert

from adapters.crash import crash_point
from adapters.postgres.tables import notifications as table
from adapters.reasons import one_line
from application.notification_record import Notification, NotificationRequest
from application.notifications import Kind, State


def _first_sight(state: State, attempts: int) -> Insert:
    """A notification's row, unless one exists (then nothing is written)."""
    return (
        insert(table)
        .values(
            event_id=sa.bindparam("new_event_id"),
            kind=sa.bindparam("new_kind"),
            enrollment_id=sa.bindparam("new_enrollment_id"),
            student_id=sa.bindparam("new_student_id"),
            state=state.value,
            attempts=attempts,
        )
        .on_conflict_do_nothing()
    )


# Built once: SQLAlchemy caches a statement's compiled form by the statement
# object, so one rebuilt per call paid for its cache key every time.
# Its age on the database's clock: retries are bounded by it (decide's
# give_up_after), whichever host's clock the worker has.
_AGE = sa.extract("epoch", sa.func.now() - table.c.created_at).label("age_s")
_OPEN = _first_sight(State.PENDING, 0).returning(*table.c, _AGE)
_OPEN_SENDING = _first_sight(State.SENDING, 1).returning(table.c.event_id)
_FIND = sa.select(table, _AGE).where(table.c.event_id == sa.bindparam("find_event_id"))
# One statement for every state: a value not given keeps the column's.
_MARK = (
    sa.update(table)
    .where(table.c.event_id == sa.bindparam("mark_event_id"))
    # `sent` is final: a stale worker's later mark (a redelivery's copy that
    # looked before the first one finished) never undoes it.
    .where(table.c.state != State.SENT.value)
    .values(
        state=sa.bindparam("new_state"),
        updated_at=sa.func.now(),
        attempts=sa.func.coalesce(
            sa.bindparam("new_attempts", type_=sa.Integer), table.c.attempts
        ),
        last_error=sa.func.coalesce(
            sa.bindparam("new_error", type_=sa.Text), table.c.last_error
        ),
        provider_id=sa.func.coalesce(
            sa.bindparam("new_provider_id", type_=sa.Text), table.c.provider_id
        ),
        sent_at=sa.case(
            (sa.bindparam("now_sent", type_=sa.Boolean), sa.func.now()),
            else_=table.c.sent_at,
        ),
    )
)


class SqlNotificationStore:
    def __init__(self, engine: sa.Engine) -> None:
        # Each write is one statement: in autocommit it is committed when it
        # returns, without the BEGIN and COMMIT round trips of a transaction.
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")

    def open(self, request: NotificationRequest) -> Notification:
        with self._engine.connect() as conn:
            row = conn.execute(_OPEN, _new_row(request)).one_or_none()
            if row is None:  # seen before: its row says how far it got
                row = conn.execute(_FIND, {"find_event_id": request.event_id}).one()
        return _notification(row)

    def open_sending(self, request: NotificationRequest) -> bool:
        with self._engine.connect() as conn:
            created = conn.execute(_OPEN_SENDING, _new_row(request)).one_or_none()
        return created is not None

    def mark(
        self,
        event_id: UUID,
        state: State,
        *,
        attempts: int | None = None,
        error: str | None = None,
        provider_id: str | None = None,
    ) -> None:
        if state is State.SENT:
            crash_point("worker.after_accept")  # accepted; the state not yet saved
        with self._engine.connect() as conn:
            conn.execute(
                _MARK,
                {
                    "mark_event_id": event_id,
                    "new_state": state.value,
                    "new_attempts": attempts,
                    "new_error": None if error is None else one_line(error),
                    "new_provider_id": (
                        None if provider_id is None else one_line(provider_id)
                    ),
                    "now_sent": state is State.SENT,
                },
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


def _new_row(request: NotificationRequest) -> dict[str, object]:
    return {
        "new_event_id": request.event_id,
        "new_kind": request.kind.value,
        "new_enrollment_id": request.enrollment_id,
        "new_student_id": request.student_id,
    }


def _notification(row: sa.Row[Any]) -> Notification:
    return Notification(
        event_id=row.event_id,
        kind=Kind(row.kind),
        enrollment_id=row.enrollment_id,
        state=State(row.state),
        attempts=row.attempts,
        last_error=row.last_error,
        sent_at=row.sent_at,
        age_s=float(getattr(row, "age_s", 0.0) or 0.0),
    )
