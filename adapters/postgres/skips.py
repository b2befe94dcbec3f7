"""Stored events a projection rebuild skipped as poison, kept where operators look."""

from __future__ import annotations

from uuid import UUID

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import rebuild_skips


@attrs.frozen
class Skipped:
    notification_id: int
    event_id: UUID | None  # None: the stored event could not even be mapped
    reason: str


def record_skip(engine: sa.Engine, projection: str, skipped: Skipped) -> None:
    """Upsert in a transaction of its own: a retried switch records it once."""
    stmt = insert(rebuild_skips).values(
        projection=projection,
        notification_id=skipped.notification_id,
        event_id=skipped.event_id,
        reason=skipped.reason,
    )
    keys = [rebuild_skips.c.projection, rebuild_skips.c.notification_id]
    with engine.begin() as conn:
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=keys,
                set_={"reason": stmt.excluded.reason, "skipped_at": sa.func.now()},
            )
        )


def list_skips(engine: sa.Engine, projection: str) -> list[Skipped]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(rebuild_skips)
            .where(rebuild_skips.c.projection == projection)
            .order_by(rebuild_skips.c.notification_id)
        )
        return [Skipped(r.notification_id, r.event_id, r.reason) for r in rows]
