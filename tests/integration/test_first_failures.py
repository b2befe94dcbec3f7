"""The first failure of a message is kept across its later failures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from adapters.postgres.first_failures import FailureKey, FirstFailures

STORED = datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)


def key(consumer: str, stored_at: datetime = STORED) -> FailureKey:
    return FailureKey(consumer, "CLUB_EVENTS", 42, stored_at)


def test_a_later_failure_keeps_the_first_time_until_forgotten(container) -> None:
    failures = FirstFailures(container.engine)
    consumer = f"c-{uuid4().hex[:6]}"
    first = STORED + timedelta(seconds=5)
    failures.record(key(consumer), first)
    failures.record(key(consumer), first + timedelta(seconds=9))
    assert failures.first(key(consumer)) == first
    assert failures.first(key(f"{consumer}-other")) is None
    failures.forget(key(consumer))
    assert failures.first(key(consumer)) is None


def test_a_row_left_by_a_recreated_streams_message_is_not_this_ones(
    container,
) -> None:
    failures = FirstFailures(container.engine)
    consumer = f"c-{uuid4().hex[:6]}"
    old, new = key(consumer), key(consumer, STORED + timedelta(days=1))
    failures.record(old, STORED + timedelta(seconds=1))  # never forgotten (a crash)
    assert failures.first(new) is None  # same sequence, another message
    at = STORED + timedelta(days=1, seconds=3)
    failures.record(new, at)
    assert failures.first(new) == at
