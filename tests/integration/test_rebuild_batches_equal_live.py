"""Property: what a rebuild writes through its own path — batches read, mapped and
written by three threads, each aggregated in memory, the shadow inbox by COPY — equals
the live models, wherever its batches cut the history.

A module of its own: its database holds only these histories, which each example's
rebuild reads from the start.
"""

from __future__ import annotations

from uuid import uuid4

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.postgres.inbox import Delivery, apply_batch
from adapters.postgres.rebuild import Rebuild
from adapters.postgres.tables import inbox
from application.contracts.meaning import meaning_digest
from tests.integration.test_rebuilt_equals_live import (
    PROJECTIONS,
    operations,
    record_history,
    rows,
)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=operations, data=st.data())
def test_live_equals_what_the_rebuild_writes_set_based_in_any_batches(
    container, ops, data
) -> None:
    """The rebuild's own path (a batch aggregated in memory, the shadow inbox by
    COPY, batches read and written by other threads), its batches cutting the
    history anywhere, equals the live models event for event."""
    lessons, envelopes = record_history(container, ops)
    consumer = f"live-{uuid4().hex[:8]}"
    for module, *_ in PROJECTIONS:
        with container.engine.begin() as conn:
            chunk = [Delivery(e, meaning_digest(e), 0) for e in envelopes]
            apply_batch(conn, f"{consumer}-{module.NAME}", chunk, module.apply)
    batch_size = data.draw(st.integers(1, 9), label="notifications per batch")
    for module, table, column in PROJECTIONS:
        rebuild = Rebuild(
            engine=container.engine,
            recorder=container.app.recorder,
            mapper=container.app.mapper,
            name=module.NAME,
            metadata=module.metadata,
            apply=module.apply,
            batch_size=batch_size,
        )
        rebuild.build_shadow()
        assert rebuild.skipped == ()
        rebuilt_engine = container.engine.execution_options(
            schema_translate_map={None: rebuild.shadow}
        )
        with container.engine.connect() as live, rebuilt_engine.connect() as rebuilt:
            live_rows = rows(live, table, column, lessons)
            if module is PROJECTIONS[0][0]:  # every lesson has its statistics row
                assert live_rows  # real rows are compared
            assert live_rows == rows(rebuilt, table, column, lessons)
            shadow_inbox = rebuilt.execute(
                sa.select(sa.func.count()).select_from(inbox)
            ).scalar_one()
            assert shadow_inbox == rebuild.events_applied
