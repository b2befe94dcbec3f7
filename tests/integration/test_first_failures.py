"""The first failure of a message is kept across its later failures."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from adapters.postgres.first_failures import FailureKey, FirstFailures
from entrypoints.runtime.bootstrap import migrate_database

STORED = datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)


def key(consumer: str, stored_at: datetime = STORED) -> FailureKey:
    return FailureKey(consumer, "CLUB_EVENTS", 42, stored_at)


def test_a_later_failure_keeps_the_first_time_until_forgotten(container) -> None:
    failures = FirstFailures(container.engine)
    consumer = f"c-{uuid4().hex[:6]}"
    ours, other = key(consumer), key(f"{consumer}-other")
    first = STORED + timedelta(seconds=5)
    failures.record([ours], first)
    failures.record([ours], first + timedelta(seconds=9))
    assert failures.first([ours, other]) == {ours: first}
    failures.forget([ours])
    assert failures.first([ours]) == {}


def test_a_row_left_by_a_recreated_streams_message_is_not_this_ones(
    container,
) -> None:
    failures = FirstFailures(container.engine)
    consumer = f"c-{uuid4().hex[:6]}"
    old, new = key(consumer), key(consumer, STORED + timedelta(days=1))
    failures.record([old], STORED + timedelta(seconds=1))  # never forgotten (a crash)
    assert failures.first([new]) == {}  # same sequence, another message
    at = STORED + timedelta(days=1, seconds=3)
    failures.record([new], at)
    assert failures.first([new]) == {new: at}


def test_a_failure_recorded_within_a_transaction_goes_with_it(container) -> None:
    failures = FirstFailures(container.engine)
    consumer = f"c-{uuid4().hex[:6]}"
    kept, lost = key(consumer), key(f"{consumer}-rolled-back")
    with container.engine.begin() as conn:
        failures.record([kept], STORED, within=conn)

    def failed_batch() -> None:
        with container.engine.begin() as conn:
            failures.record([lost], STORED, within=conn)
            raise RuntimeError("the batch failed")

    with pytest.raises(RuntimeError):
        failed_batch()
    assert failures.first([kept, lost]) == {kept: STORED}


def test_poison_failures_are_counted_from_the_first_time_kept(container) -> None:
    failures = FirstFailures(container.engine)
    consumer = f"c-{uuid4().hex[:6]}"
    ours, other = key(consumer), key(f"{consumer}-other")
    waited = STORED + timedelta(seconds=2)
    failures.record([ours], waited)  # a retry of another kind: no poison yet
    counts = [
        failures.count_poison([ours], STORED + timedelta(seconds=n)) for n in (5, 9)
    ]
    assert counts == [{ours: 1}, {ours: 2}]
    assert failures.first([ours]) == {ours: waited}  # the first failure of any kind
    assert failures.count_poison([other], STORED) == {other: 1}  # its own count


def test_a_recreated_streams_message_counts_its_poison_failures_afresh(
    container,
) -> None:
    failures = FirstFailures(container.engine)
    consumer = f"c-{uuid4().hex[:6]}"
    old, new = key(consumer), key(consumer, STORED + timedelta(days=1))
    for _ in range(3):
        failures.count_poison([old], STORED)  # never forgotten (a crash)
    at = STORED + timedelta(days=1, seconds=3)
    assert failures.count_poison([new], at) == {new: 1}
    assert failures.first([new]) == {new: at}
    failures.count_poison([old], STORED)  # the old message's row again
    failures.record([new], at)  # a retry of another kind replaces it: no poison
    assert failures.count_poison([new], at) == {new: 1}


def test_a_poison_failure_counted_within_a_rolled_back_batch_is_not_counted(
    container,
) -> None:
    failures = FirstFailures(container.engine)
    ours = key(f"c-{uuid4().hex[:6]}")

    def failed_batch() -> None:
        with container.engine.begin() as conn:
            assert failures.count_poison([ours], STORED, within=conn) == {ours: 1}
            raise RuntimeError("the batch failed")

    with pytest.raises(RuntimeError):
        failed_batch()
    assert failures.count_poison([ours], STORED) == {ours: 1}


def test_a_database_from_before_the_count_gets_it_on_migrate(
    container, migrated
) -> None:
    database_url, _ = migrated
    ours = key(f"c-{uuid4().hex[:6]}")
    with container.engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE first_failures DROP COLUMN poison_failures")
        conn.exec_driver_sql(
            "INSERT INTO first_failures VALUES (%s, %s, %s, %s, %s)",
            (ours.consumer, ours.stream, ours.stream_seq, STORED, STORED),
        )
    migrate_database(database_url)
    migrate_database(database_url)  # again: nothing to add
    assert FirstFailures(container.engine).count_poison([ours], STORED) == {ours: 1}


def test_migrate_beside_a_consumer_writing_a_failure_does_not_wait_for_it(
    container, migrated
) -> None:
    """A consumer's batch holds a row of the table in its transaction: migrating
    again (the column there) must not queue behind it for a table lock."""
    database_url, _ = migrated
    ours = key(f"c-{uuid4().hex[:6]}")
    done = threading.Event()
    with container.engine.connect() as consumer, consumer.begin():
        FirstFailures(container.engine).count_poison([ours], STORED, within=consumer)
        worker = threading.Thread(
            target=lambda: (migrate_database(database_url), done.set())
        )
        worker.start()
        migrated_meanwhile = done.wait(30)
    worker.join(60)
    assert migrated_meanwhile, "migrate waited for the consumer's transaction"
