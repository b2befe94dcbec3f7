"""Feeds the saga from the notification log: a purchase event wakes its purchase.

The log is the outbox the relay publishes from, so a purchase whose reservation
committed is found here even if the API died before it nudged the deadline table.
Reading it directly (not through JetStream) keeps the saga independent of the
published purchase contracts; several saga processes may read at once, because a
nudge is idempotent and the position only moves forward.
"""

from __future__ import annotations

from uuid import UUID

import sqlalchemy as sa
from eventsourcing.persistence import ApplicationRecorder
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.deadlines import SagaDeadlines
from adapters.postgres.tables import saga_positions

FEED = "saga"
# The facts that need the saga's attention: a new hold, what the outside world
# reported, a refund asked for by a cancelled seat, an operator's decision. (Its
# own steps' events need none: it decides right after them.)
WAKING_TOPICS = tuple(
    f"domain.purchase:Purchase.{name}"
    for name in (
        "Reserved",
        "RefundRequested",
        "ReviewResolved",
        "PaymentCaptured",
        "PaymentDeclined",
        "Refunded",
        "AlternativeAccepted",
    )
)


class SagaFeed:
    def __init__(
        self,
        engine: sa.Engine,
        recorder: ApplicationRecorder,
        deadlines: SagaDeadlines,
        *,
        batch_size: int = 500,
    ) -> None:
        self._engine = engine
        self._recorder = recorder
        self._deadlines = deadlines
        self._batch_size = batch_size

    def position(self) -> int:
        with self._engine.connect() as conn:
            found: int | None = conn.execute(
                sa.select(saga_positions.c.position).where(
                    saga_positions.c.name == FEED
                )
            ).scalar()
        return found or 0

    def pump(self) -> int:
        """Nudge the purchases of one batch of new events; returns how many events.

        The position moves past what was scanned even when nothing matched, so a
        long run of enrollments is read once, not at every poll."""
        after = self.position()
        newest = self._recorder.max_notification_id() or 0
        if newest <= after:
            return 0
        notifications = self._recorder.select_notifications(
            start=after,
            limit=self._batch_size,
            stop=newest,
            topics=WAKING_TOPICS,
            inclusive_of_start=False,
        )
        if len(notifications) == self._batch_size:
            newest = notifications[-1].id  # more may match after this batch
        woken = sorted({UUID(str(n.originator_id)) for n in notifications})
        with self._engine.begin() as conn:
            self._deadlines.nudge(conn, woken)
            stmt = insert(saga_positions).values(name=FEED, position=newest)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[saga_positions.c.name],
                    set_={
                        "position": sa.func.greatest(saga_positions.c.position, newest)
                    },
                )
            )
        return len(notifications)
