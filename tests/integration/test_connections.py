"""Every database connection notices a silent peer and bounds its statements."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa
from eventsourcing.persistence import OperationalError

from entrypoints.runtime import bootstrap


def _settings(conn: psycopg.Connection) -> dict[str, str]:
    params = conn.info.get_parameters()
    row = conn.execute("SHOW statement_timeout").fetchone()
    timeout = row["statement_timeout"] if isinstance(row, dict) else row[0]
    return {"keepalives_idle": params.get("keepalives_idle", ""), "timeout": timeout}


def test_read_model_connections_have_keepalives_and_a_statement_timeout(
    container,
) -> None:
    with container.engine.connect() as conn:
        driver = conn.connection.driver_connection
        assert isinstance(driver, psycopg.Connection)
        assert _settings(driver) == {"keepalives_idle": "5", "timeout": "15s"}


def test_event_store_connections_have_keepalives_and_a_statement_timeout(
    container,
) -> None:
    with container.app.recorder.datastore.get_connection() as conn:
        assert _settings(conn) == {"keepalives_idle": "5", "timeout": "15s"}


def test_a_statement_past_the_timeout_is_cancelled_not_waited_for(migrated) -> None:
    env = bootstrap.eventsourcing_env(migrated[0]) | {
        "CLUB_STATEMENT_TIMEOUT_SECONDS": "0.2"
    }
    container = bootstrap.build(migrated[0], pool_size=1, event_store_env=env)
    try:
        with (
            pytest.raises(OperationalError, match="statement timeout"),
            container.app.recorder.datastore.get_connection() as conn,
        ):
            conn.execute("SELECT pg_sleep(5)")
        with container.app.recorder.datastore.get_connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
    finally:
        container.close()


def test_a_failed_statement_never_names_its_values(container) -> None:
    """Errors reach logs and dead-letter reasons: the statement, not the address."""
    address = "ann@example.org"
    failing = sa.text("SELECT 1 / 0, CAST(:v AS text)")  # the server names no value
    with pytest.raises(sa.exc.DBAPIError) as raised, container.engine.connect() as conn:
        conn.execute(failing, {"v": address})
    assert "division by zero" in str(raised.value)
    assert address not in str(raised.value)
