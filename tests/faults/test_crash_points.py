"""Kill a role at each named boundary, restart it, and compare the three facts.

docs/background.md §34-35, exercise 1: for every point where a process can die, who
repeats the
work and where the duplicate is recognised. Each case runs three times in a row.
"""

from __future__ import annotations

import time
from uuid import uuid4

import httpx
import pytest

from tests.faults.facts import (
    Facts,
    enroll,
    facts,
    settled,
    setup_lesson,
    statistics_row_exists,
)
from tests.identity import ADMIN
from tests.stack import eventually

ONCE = Facts(
    enrollment_exists=True, intent_recorded=1, stream_copies=1, counter=1, inbox_rows=1
)
NOTHING = Facts(
    enrollment_exists=False, intent_recorded=0, stream_copies=0, counter=0, inbox_rows=0
)
REPEATS = [1, 2, 3]


def retry_until_created(
    api: str, lesson_id: str, student: str, key: str
) -> httpx.Response:
    """A client that keeps its Idempotency-Key until it gets its answer."""

    def attempt() -> httpx.Response | None:
        try:
            response = enroll(api, lesson_id, student, key)
        except httpx.HTTPError:
            return None
        assert response.status_code in (201, 409, 503), response.text
        return response if response.status_code == 201 else None

    return eventually(attempt, timeout=30, interval=0.2)


def ready_lesson(stack, container) -> tuple[str, str]:
    lesson_id, student = setup_lesson(stack.base)
    eventually(lambda: statistics_row_exists(container, lesson_id))
    return lesson_id, student


@pytest.mark.parametrize("repeat", REPEATS)
@pytest.mark.parametrize(
    ("point", "exists_at_crash"),
    [("api.before_commit", False), ("api.after_commit", True)],
)
def test_api_dies_and_the_client_retry_recovers(
    stack, container, migrated, point, exists_at_crash, repeat
) -> None:
    lesson_id, student = ready_lesson(stack, container)
    key = str(uuid4())
    stack.restart("api", CLUB_CRASH_AT=point)
    with pytest.raises(httpx.HTTPError):  # the connection dies with the process
        enroll(stack.base, lesson_id, student, key)
    assert stack.died("api") == -9
    if exists_at_crash:  # committed: the chain carries it on with no reply sent
        assert settled(container, migrated[1], lesson_id, key) == ONCE
    else:
        assert facts(container, migrated[1], lesson_id, key) == NOTHING

    stack.start("api")
    created = retry_until_created(stack.base, lesson_id, student, key)
    assert created.json()["status"] == "confirmed"
    assert settled(container, migrated[1], lesson_id, key) == ONCE
    assert (
        httpx.get(f"{stack.base}/lessons/{lesson_id}", headers=ADMIN).json()[
            "seats_taken"
        ]
        == 1
    )


@pytest.mark.parametrize("repeat", REPEATS)
@pytest.mark.parametrize(
    ("role", "point", "copies_at_crash", "counter_at_crash"),
    [
        # Nothing published yet: the next lease holder reads the batch again.
        ("relay", "relay.after_read", {0}, {0}),
        # Sent, PubAcks not awaited: stored or not; a republish is deduplicated.
        ("relay", "relay.after_publish", {0, 1}, {0, 1}),
        # Stored, position not saved: the republish hits the duplicate window.
        ("relay", "relay.after_puback", {1}, {0, 1}),
        # Nothing committed: redelivered after ack_wait and applied then.
        ("projector", "consumer.after_receive", {1}, {0}),
        # Committed, not acked: redelivered, and the inbox recognises it.
        ("projector", "consumer.after_commit", {1}, {1}),
    ],
)
def test_a_worker_dies_and_its_restart_leaves_one_effect(
    stack, container, migrated, role, point, copies_at_crash, counter_at_crash, repeat
) -> None:
    lesson_id, student = ready_lesson(stack, container)
    key = str(uuid4())
    stack.restart(role, CLUB_CRASH_AT=point)
    assert enroll(stack.base, lesson_id, student, key).status_code == 201
    assert stack.died(role) == -9
    at_crash = facts(container, migrated[1], lesson_id, key)
    assert at_crash.enrollment_exists
    assert at_crash.intent_recorded == 1
    assert at_crash.stream_copies in copies_at_crash
    assert at_crash.counter in counter_at_crash

    started = time.monotonic()
    stack.start(role)
    assert settled(container, migrated[1], lesson_id, key) == ONCE
    assert time.monotonic() - started < 20
