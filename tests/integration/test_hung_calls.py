"""A call on a connection whose server never answers ends at its deadline.

The backends are stopped (SIGSTOP): alive at the TCP level, so neither keepalives
nor `statement_timeout` ever fire. Each pool closes the connection under the call
and serves the next one on a fresh connection, without waiting on the other hung
ones it held (adapters/postgres/call_deadline.py).
"""

from __future__ import annotations

import os
import resource
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from adapters.postgres.call_deadline import (
    MARGIN_S,
    DatabaseDeadlineError,
    bounded_connection_class,
    deadline_passed,
)
from adapters.postgres.database import create_engine
from entrypoints.runtime import bootstrap
from tests.hung_backends import backend_pids, stopped

TIMEOUT_S = 1.0  # the statement timeout of these tests' connections
DEADLINE_S = TIMEOUT_S + MARGIN_S
SLACK_S = 2.0  # a loaded machine's scheduling, on top of the deadline


def test_a_call_to_a_stopped_backend_ends_at_its_deadline(migrated) -> None:
    conn = bounded_connection_class(DEADLINE_S).connect(migrated[0])
    pid = conn.info.backend_pid
    with stopped(migrated[0], lambda: [pid]):
        began = time.monotonic()
        with pytest.raises(DatabaseDeadlineError, match="did not answer"):
            conn.execute("SELECT 1")
        took = time.monotonic() - began
    assert DEADLINE_S <= took < DEADLINE_S + SLACK_S
    assert conn.closed  # so that any pool replaces it


def test_a_call_that_answers_in_time_is_untouched(migrated) -> None:
    with bounded_connection_class(0.5).connect(migrated[0]) as conn:
        conn.execute("SELECT pg_sleep(0.2)")
        with conn.transaction():  # BEGIN and COMMIT are waits too
            conn.execute("SELECT 1")
        assert not conn.closed


def _open_read_model_connections(engine: sa.Engine, count: int) -> list[int]:
    def backend(_: int) -> int:
        with engine.connect() as conn:
            pid = conn.execute(sa.select(sa.func.pg_backend_pid())).scalar_one()
            time.sleep(0.2)  # held at once: the pool opens `count` connections
            return int(pid)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(backend, range(count)))


def test_the_read_model_pool_drops_every_hung_connection_at_the_first(
    migrated,
) -> None:
    engine = create_engine(migrated[0], pool_size=4, statement_timeout=TIMEOUT_S)
    try:
        pids = _open_read_model_connections(engine, 4)
        assert len(set(pids)) == 4
        with stopped(migrated[0], lambda: pids, at_least=4):
            began = time.monotonic()
            with (
                pytest.raises(sa.exc.OperationalError) as raised,
                engine.connect() as conn,
            ):
                conn.execute(sa.select(1))
            assert deadline_passed(raised.value)
            # then: the next calls go to fresh connections, none waits again
            for _ in range(4):
                with engine.connect() as conn:
                    fresh = conn.execute(sa.select(sa.func.pg_backend_pid()))
                    assert fresh.scalar_one() not in pids
            assert time.monotonic() - began < DEADLINE_S + SLACK_S
    finally:
        engine.dispose()


def test_the_event_store_drains_its_hung_pool_and_reads_again(migrated) -> None:
    env = bootstrap.eventsourcing_env(migrated[0]) | {
        "CLUB_STATEMENT_TIMEOUT_SECONDS": str(TIMEOUT_S),
        "POSTGRES_POOL_SIZE": "4",
    }
    container = bootstrap.build(migrated[0], pool_size=1, event_store_env=env)
    recorder = container.app.recorder
    try:
        recorder.max_notification_id()  # the pool is open: four connections
        pool = recorder.datastore.pool
        held = [pool.getconn() for _ in range(4)]
        for conn in held:
            pool.putconn(conn)
        # Every connection the pool holds, not only those four: a request that
        # queued while it opened may have grown it by one more.
        every = lambda: backend_pids(migrated[0], "datname = current_database()")  # noqa: E731
        with stopped(migrated[0], every, at_least=4):
            began = time.monotonic()
            recorder.max_notification_id()  # then: answered, on a fresh one
            first = time.monotonic() - began
            assert first < DEADLINE_S + SLACK_S
            began = time.monotonic()
            for _ in range(4):  # and the other hung ones are gone, not tried
                recorder.max_notification_id()
            assert time.monotonic() - began < SLACK_S
    finally:
        container.close()


def test_a_hang_seen_by_one_pool_replaces_the_others_idle_connections(
    migrated,
) -> None:
    """The server is the same: the event store's idle connections are not tried."""
    engine = create_engine(migrated[0], pool_size=1, statement_timeout=TIMEOUT_S)
    env = bootstrap.eventsourcing_env(migrated[0]) | {
        "CLUB_STATEMENT_TIMEOUT_SECONDS": str(TIMEOUT_S),
        "POSTGRES_POOL_SIZE": "2",
    }
    container = bootstrap.build(migrated[0], pool_size=1, event_store_env=env)
    recorder = container.app.recorder
    try:
        pids = _open_read_model_connections(engine, 1)
        recorder.max_notification_id()
        pool = recorder.datastore.pool
        held = [pool.getconn() for _ in range(2)]
        pids += [conn.info.backend_pid for conn in held]
        for conn in held:
            pool.putconn(conn)
        with stopped(migrated[0], lambda: pids, at_least=3):
            with pytest.raises(sa.exc.OperationalError), engine.connect() as conn:
                conn.execute(sa.select(1))  # given: a hang seen by one pool
            began = time.monotonic()
            recorder.max_notification_id()  # then: the other's idle ones unasked
            assert time.monotonic() - began < SLACK_S
    finally:
        container.close()
        engine.dispose()


def test_calls_long_waiting_on_a_hung_server_end_with_the_first_abandoned(
    migrated,
) -> None:
    """One deadline, not one after another: a call that took a hung connection
    later ends when the first is abandoned, not at its own deadline."""
    connect = bounded_connection_class(DEADLINE_S).connect
    first, later = connect(migrated[0]), connect(migrated[0])
    pids = [first.info.backend_pid, later.info.backend_pid]
    with stopped(migrated[0], lambda: pids, at_least=2), ThreadPoolExecutor(2) as pool:
        first_call = pool.submit(first.execute, "SELECT 1")
        time.sleep(DEADLINE_S / 2)  # given: the later call begins 2 s in
        later_began = time.monotonic()
        later_call = pool.submit(later.execute, "SELECT 1")
        with pytest.raises(DatabaseDeadlineError, match="did not answer within"):
            first_call.result()
        with pytest.raises(DatabaseDeadlineError, match="abandoned with it"):
            later_call.result()
        later_took = time.monotonic() - later_began
        # and a fresh connection's call, begun after, is its own
        with connect(migrated[0]) as healthy:
            assert healthy.execute("SELECT 1").fetchone() == (1,)
    # about 2 s (to the first one's deadline), never its own 4 s
    assert later_took < DEADLINE_S - 1.0
    assert first.closed
    assert later.closed


def test_a_call_begun_just_before_the_hang_is_seen_is_not_cut(migrated) -> None:
    """Younger than a second: a fresh connection's first call, not a suspect."""
    connect = bounded_connection_class(DEADLINE_S).connect
    hung, young = connect(migrated[0]), connect(migrated[0])
    pid = hung.info.backend_pid
    with stopped(migrated[0], lambda: [pid]), ThreadPoolExecutor(2) as pool:
        hung_call = pool.submit(hung.execute, "SELECT 1")
        time.sleep(DEADLINE_S - 0.5)
        young_call = pool.submit(young.execute, "SELECT pg_sleep(1.5), 1")
        with pytest.raises(DatabaseDeadlineError):
            hung_call.result()
        assert young_call.result().fetchone()[1] == 1
    assert not young.closed
    young.close()


def test_a_process_out_of_descriptors_still_makes_its_calls(migrated) -> None:
    """The cut needs a duplicate of each waiting call's socket; with none to
    spare the call is made all the same (unlisted, bounded by its deadline)."""
    with bounded_connection_class(DEADLINE_S).connect(migrated[0]) as conn:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        lowest_free = os.dup(0)
        os.close(lowest_free)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
        try:
            with pytest.raises(OSError, match="Too many open files"):
                os.close(os.dup(0))  # given: no descriptor to spare
            answer = conn.execute("SELECT 1").fetchone()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert answer == (1,)
        assert not conn.closed
