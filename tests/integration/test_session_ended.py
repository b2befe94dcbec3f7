"""A process paused inside a transaction finds its session ended by the server
(`hold_locks_at_most`): on waking it gets a lost connection to retry, not an error
that crashes it, and the engine's next connection works."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from adapters.postgres.database import create_engine
from adapters.transient import is_transient


def paused_inside_a_transaction(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text("SELECT 1"))
        time.sleep(1.0)  # paused, as SIGSTOP would: idle inside the transaction
        conn.execute(sa.text("SELECT 1"))


def test_a_session_ended_mid_transaction_is_a_lost_connection(
    database_url: str,
) -> None:
    engine = create_engine(database_url, pool_size=1, hold_locks_at_most=0.3)
    try:
        with pytest.raises(sa.exc.DBAPIError) as ended:
            paused_inside_a_transaction(engine)
        assert isinstance(ended.value, sa.exc.OperationalError)
        assert is_transient(ended.value)
        assert ended.value.connection_invalidated
        with engine.connect() as conn:  # the pool replaced the ended connection
            assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
    finally:
        engine.dispose()
