"""The payment webhooks Club received: each provider event id once, each refusal kept.

The fact a webhook reports is recorded first, by a use case that recognises a
repeated fact (the same capture, the same refund) and records nothing again; the
event id's row and the saga's nudge commit together afterwards. A process killed in
between leaves no row, so the provider's redelivery runs the (idempotent) use case
again and writes it: the effect happens once, the row says so.
"""

from __future__ import annotations

import hashlib
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.deadlines import SagaDeadlines
from adapters.postgres.tables import payment_webhooks, refused_webhooks

REFUSALS_KEPT = 1000  # a sample for the operator, not a log of every forger


class WebhookLog:
    def __init__(self, engine: sa.Engine, deadlines: SagaDeadlines) -> None:
        self._engine = engine
        self._deadlines = deadlines

    def outcome_of(self, event_id: str) -> str | None:
        """What the first delivery of this event did; None: not seen yet."""
        with self._engine.connect() as conn:
            found: str | None = conn.execute(
                sa.select(payment_webhooks.c.outcome).where(
                    payment_webhooks.c.event_id == event_id
                )
            ).scalar()
        return found

    def accept(
        self, *, event_id: str, type_: str, purchase_id: UUID | None, outcome: str
    ) -> str:
        """Record the event id and wake its purchase, in one transaction. Returns
        the outcome stored first (a racing redelivery may have written it)."""
        with self._engine.begin() as conn:
            inserted = conn.execute(
                insert(payment_webhooks)
                .values(
                    event_id=event_id,
                    type=type_,
                    purchase_id=purchase_id,
                    outcome=outcome,
                )
                .on_conflict_do_nothing()
                .returning(payment_webhooks.c.outcome)
            ).scalar()
            if purchase_id is not None:
                self._deadlines.nudge(conn, [purchase_id])
        return inserted if inserted is not None else self.outcome_of(event_id) or ""

    def refuse(self, *, reason: str, remote: str | None, body: bytes) -> None:
        """Kept for the operator: the body's hash and size, never the body; the
        newest REFUSALS_KEPT only (the counter counts them all), so anonymous
        refusals cannot grow a table for ever."""
        with self._engine.begin() as conn:
            conn.execute(
                sa.insert(refused_webhooks).values(
                    reason=reason,
                    remote=(remote or "")[:64] or None,
                    body_sha256=hashlib.sha256(body).hexdigest(),
                    body_bytes=len(body),
                )
            )
            oldest_kept = (
                sa.select(refused_webhooks.c.id)
                .order_by(refused_webhooks.c.id.desc())
                .offset(REFUSALS_KEPT - 1)
                .limit(1)
                .scalar_subquery()
            )
            conn.execute(
                sa.delete(refused_webhooks).where(refused_webhooks.c.id < oldest_kept)
            )

    def refused_count(self) -> int:
        with self._engine.connect() as conn:
            count: int = conn.execute(
                sa.select(sa.func.count()).select_from(refused_webhooks)
            ).scalar_one()
        return count
