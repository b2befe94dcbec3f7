"""The audit records of dead-letter replays (`dlq_replays`), read back.

`adapters.nats.replay` writes one row per replay, dry runs included; the operator's
page reads the one it just made, so its banner says what was recorded.
"""

from __future__ import annotations

from uuid import UUID

import attrs
import sqlalchemy as sa

from adapters.postgres.tables import dlq_replays


@attrs.frozen(kw_only=True)
class ReplayAudit:
    replay_id: UUID
    operator: str
    consumer: str
    reason: str
    replayed: int
    outcome: str  # running | finished | stopped | failed


class SqlReplayAudits:
    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def find(self, replay_id: UUID, *, operator: str) -> ReplayAudit | None:
        """The replay's record if `operator` made it; None otherwise."""
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(
                    dlq_replays.c.replay_id,
                    dlq_replays.c.operator,
                    dlq_replays.c.consumer,
                    dlq_replays.c.reason,
                    dlq_replays.c.replayed,
                    dlq_replays.c.outcome,
                ).where(
                    dlq_replays.c.replay_id == replay_id,
                    dlq_replays.c.operator == operator,
                )
            ).first()
        if row is None:
            return None
        return ReplayAudit(
            replay_id=row.replay_id,
            operator=row.operator,
            consumer=row.consumer,
            reason=row.reason,
            replayed=row.replayed,
            outcome=row.outcome,
        )
