"""The saga's durable deadlines: one row per purchase, claimed once, by lease.

Any saga process may claim a due row (`FOR UPDATE SKIP LOCKED`: two never take the
same one at once); the claim lasts `lease` seconds, so a process that dies or
pauses mid-step loses it and another one takes over. Releasing writes the next
deadline only under the claim's own token, and only if nobody nudged the purchase
meanwhile — a nudge (a webhook's fact, a new event) must never be lost.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from uuid import UUID

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import saga_deadlines as deadlines


@attrs.frozen
class Claim:
    purchase_id: UUID
    token: UUID
    nudges: int


class SagaDeadlines:
    def __init__(self, engine: sa.Engine, *, owner: str, lease: float) -> None:
        self._engine = engine
        self.owner = owner
        self._lease = timedelta(seconds=lease)

    def nudge(self, conn: sa.Connection, purchase_ids: list[UUID]) -> None:
        """Make each purchase due now, in the caller's transaction."""
        if not purchase_ids:
            return
        rows = [{"purchase_id": pid, "due_at": sa.func.now()} for pid in purchase_ids]
        stmt = insert(deadlines).values(rows)
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[deadlines.c.purchase_id],
                set_={
                    "due_at": sa.func.now(),
                    "nudges": deadlines.c.nudges + 1,
                },
            )
        )

    def nudge_now(self, purchase_ids: list[UUID]) -> None:
        with self._engine.begin() as conn:
            self.nudge(conn, sorted(set(purchase_ids)))  # sorted: no lock cycles

    def claim(self, limit: int) -> list[Claim]:
        """Due rows that nobody holds (or whose holder's lease ran out)."""
        token = uuid.uuid4()
        free = (
            sa.select(deadlines.c.purchase_id)
            .where(deadlines.c.due_at <= sa.func.now())
            .where(
                deadlines.c.claimed_until.is_(None)
                | (deadlines.c.claimed_until < sa.func.now())
            )
            .order_by(deadlines.c.due_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        stmt = (
            sa.update(deadlines)
            .where(deadlines.c.purchase_id.in_(free.scalar_subquery()))
            .values(
                claimed_until=sa.func.now() + self._lease,
                claimed_by=self.owner,
                claim_token=token,
            )
            .returning(deadlines.c.purchase_id, deadlines.c.nudges)
        )
        with self._engine.begin() as conn:
            rows = conn.execute(stmt).all()
        return [Claim(row.purchase_id, token, row.nudges) for row in rows]

    def renew(self, claim: Claim) -> bool:
        """Extend the claim's lease from now (the database's clock). False: the
        claim was lost, another process holds the row."""
        stmt = (
            sa.update(deadlines)
            .where(deadlines.c.purchase_id == claim.purchase_id)
            .where(deadlines.c.claim_token == claim.token)
            .values(claimed_until=sa.func.now() + self._lease)
        )
        with self._engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    @property
    def lease_seconds(self) -> float:
        return self._lease.total_seconds()

    def release(
        self,
        claim: Claim,
        next_due: datetime | None,
        error: str | None = None,
        *,
        as_of: datetime | None = None,
    ) -> bool:
        """Store the next deadline. False: the claim was lost (another process took
        the row after our lease ran out), so what we would write is stale.

        `as_of`: the caller's clock when it computed `next_due`; the wait is then
        kept, on the database's clock (`now()` + the wait), which claims compare
        with: a saga host whose clock runs behind would otherwise write deadlines
        already past (a busy loop), one running ahead would wait too long."""
        nudged = deadlines.c.nudges != claim.nudges
        due: sa.ColumnElement[datetime] | datetime | None = next_due
        if next_due is not None and as_of is not None:
            due = sa.func.now() + sa.literal(next_due - as_of, sa.Interval)
        stmt = (
            sa.update(deadlines)
            .where(deadlines.c.purchase_id == claim.purchase_id)
            .where(deadlines.c.claim_token == claim.token)
            .values(
                # Nudged while we worked: stay due now, the nudge's fact is unseen.
                due_at=sa.case((nudged, deadlines.c.due_at), else_=due),
                claimed_until=None,
                claimed_by=None,
                claim_token=None,
                last_error=error,
            )
        )
        with self._engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def due_at(self, purchase_id: UUID) -> datetime | None:
        with self._engine.connect() as conn:
            found: datetime | None = conn.execute(
                sa.select(deadlines.c.due_at).where(
                    deadlines.c.purchase_id == purchase_id
                )
            ).scalar()
        return found
