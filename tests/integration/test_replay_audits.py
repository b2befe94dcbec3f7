"""The replays' audit records read back: only the operator's own, by id."""

from __future__ import annotations

from uuid import uuid4

import sqlalchemy as sa

from adapters.postgres.replays import ReplayAudit
from adapters.postgres.tables import dlq_replays


def test_a_replay_is_found_by_id_and_only_for_its_operator(container) -> None:
    replay_id = uuid4()
    with container.engine.begin() as conn:
        conn.execute(
            sa.insert(dlq_replays).values(
                replay_id=replay_id,
                operator="ops-page",
                reason="the mailer was down",
                consumer="notifications",
                dry_run=False,
                batch=10,
                rate_per_s=50.0,
                replayed=3,
                outcome="finished",
            )
        )
    assert container.replays.find(replay_id, operator="ops-page") == ReplayAudit(
        replay_id=replay_id,
        operator="ops-page",
        consumer="notifications",
        reason="the mailer was down",
        replayed=3,
        outcome="finished",
    )
    assert container.replays.find(replay_id, operator="cli") is None
    assert container.replays.find(uuid4(), operator="ops-page") is None
