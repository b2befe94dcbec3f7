"""The first failure of a message is kept across its later failures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from adapters.postgres.first_failures import FailureKey, FirstFailures

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
