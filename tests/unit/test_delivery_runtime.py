"""What the consumer runner and the job worker do alike with a message they cannot
finish: read it or give it up at once, bound a poison one, time its first failure
and dead-letter it. On fakes of the message, the table and the DLQ copy, so each
rule is seen on its own, without servers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.nats import delivery
from adapters.nats.dead_letters import Unreadable
from adapters.nats.delivery import DeliveryRuntime, decode
from adapters.postgres.first_failures import FailureKey
from application.backoff import BackoffPolicy, Jitter

STORED = datetime(2026, 1, 1, tzinfo=UTC)
EARLIER = STORED + timedelta(minutes=1)


class FakeMsg:
    def __init__(self, seq: int, delivered: int, data: bytes = b"{}") -> None:
        self.subject = "club.events.lesson.LessonScheduled"
        self.headers = {"Nats-Msg-Id": f"event-{seq}"}
        self.data = data
        self.metadata = SimpleNamespace(
            stream="CLUB_EVENTS",
            sequence=SimpleNamespace(stream=seq),
            num_delivered=delivered,
            timestamp=STORED,
        )
        self.beats = 0

    async def in_progress(self) -> None:
        self.beats += 1


class FakeFailures:
    """The first_failures table; `down` makes every step fail as a lost database."""

    def __init__(self) -> None:
        self.rows: dict[FailureKey, datetime] = {}
        self.poison: dict[FailureKey, int] = {}
        self.forgotten: list[FailureKey] = []
        self.down = False

    def record(self, keys: Any, at: datetime, *, within: Any = None) -> None:
        self._check()
        for key in keys:
            self.rows.setdefault(key, at)

    def count_poison(
        self, keys: Any, at: datetime, *, within: Any = None
    ) -> dict[FailureKey, int]:
        self.record(keys, at)
        for key in keys:
            self.poison[key] = self.poison.get(key, 0) + 1
        return {key: self.poison[key] for key in keys}

    def first(self, keys: Any) -> dict[FailureKey, datetime]:
        self._check()
        return {key: self.rows[key] for key in keys if key in self.rows}

    def forget(self, keys: Any) -> None:
        self._check()
        self.forgotten.extend(keys)

    def _check(self) -> None:
        if self.down:
            raise OSError("database unreachable")


def runtime(failures: FakeFailures, attempts: int = 3) -> DeliveryRuntime:
    return DeliveryRuntime(
        "statistics",
        js=None,  # dead_letter is replaced below
        owner=lambda _type: "team",
        failures=failures,
        role="consumer",
        order="none waits",
        poison_retry=BackoffPolicy(first=1.0, cap=8.0, jitter=Jitter.NONE),
        poison_attempts=attempts,
    )


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Unreadable, Any]]:
    """Each dead letter's item and first failure, instead of a DLQ publish."""
    sent: list[tuple[Unreadable, Any]] = []

    async def fake_dead_letter(*args: Any, first_failed_at: Any) -> None:
        sent.append((args[2], first_failed_at))

    monkeypatch.setattr(delivery, "dead_letter", fake_dead_letter)
    return sent


def test_a_body_that_is_no_envelope_is_given_up_as_malformed() -> None:
    msg = FakeMsg(7, 1, data=b"\xff not json")
    read = decode(msg)
    assert isinstance(read, Unreadable)
    assert (read.msg, read.stream_seq) == (msg, 7)
    assert read.reason.startswith("malformed: not a Club event envelope")


def test_a_poison_message_is_retried_on_its_schedule_then_given_up() -> None:
    bound = runtime(FakeFailures(), attempts=3)
    early = [bound.poison_failures([FakeMsg(5, n)], within=None) for n in (1, 2)]
    assert early == [[1], [2]]
    boom = RuntimeError("boom")
    assert [bound.poisoned(FakeMsg(5, 1), boom, n) for (n,) in early] == [None, None]
    assert [bound.retry_delay(n) for (n,) in early] == [1.0, 2.0]
    [third] = bound.poison_failures([FakeMsg(5, 3)], within=None)
    dead = bound.poisoned(FakeMsg(5, 3), boom, third)
    assert dead is not None
    assert (dead.stream_seq, dead.reason) == (5, "poison: RuntimeError: boom")


def test_the_poison_bound_counts_failures_not_the_deliveries_of_an_outage() -> None:
    """Delivered 40 times while our side was down: its first real failure is its
    first poison failure, retried, not dead-lettered."""
    bound = runtime(FakeFailures(), attempts=3)
    msg = FakeMsg(9, 41)
    [failures] = bound.poison_failures([msg], within=None)
    assert failures == 1
    assert bound.poisoned(msg, RuntimeError("boom"), failures) is None
    assert bound.retry_delay(failures) == 1.0  # the schedule's start, not its cap


def test_with_the_table_out_of_reach_the_delivery_count_bounds_the_poison() -> None:
    failures = FakeFailures()
    failures.down = True
    assert asyncio.run(runtime(failures).poison_failed(FakeMsg(9, 4))) == 4
    failures.down = False
    assert asyncio.run(runtime(failures).poison_failed(FakeMsg(9, 5))) == 1


def test_a_dead_letter_carries_the_recorded_first_failure_then_forgets_it(
    copies: list[tuple[Unreadable, Any]],
) -> None:
    failures = FakeFailures()
    bound = runtime(failures)
    retried, unknown, first_time = FakeMsg(1, 3), FakeMsg(2, 2), FakeMsg(3, 1)
    bound.record([retried], within=None)
    failures.rows[bound.key(retried)] = EARLIER
    items = [
        Unreadable(m, m.metadata.sequence.stream, "poison: x")
        for m in (retried, unknown, first_time)
    ]
    before = datetime.now(UTC)
    asyncio.run(bound.give_up(items))
    firsts = [first for _, first in copies]
    assert [item for item, _ in copies] == items
    assert firsts[0] == EARLIER
    assert all(
        first >= before for first in firsts[1:]
    )  # failing for the first time now
    # Only a redelivery can have a row: the first delivery costs no statement.
    assert failures.forgotten == [bound.key(retried), bound.key(unknown)]


def test_an_unreadable_table_leaves_every_first_failure_unsaid(
    copies: list[tuple[Unreadable, Any]],
) -> None:
    failures = FakeFailures()
    failures.down = True
    items = [Unreadable(FakeMsg(n, n), n, "poison: x") for n in (1, 2)]
    asyncio.run(runtime(failures).give_up(items))
    assert [first for _, first in copies] == [None, None]  # not a wrong time


def test_a_failure_that_cannot_be_recorded_does_not_stop_the_retry() -> None:
    failures = FakeFailures()
    failures.down = True
    asyncio.run(runtime(failures).failed(FakeMsg(1, 1)))
    failures.down = False
    msg = FakeMsg(1, 2)
    asyncio.run(runtime(failures).failed(msg))
    assert list(failures.rows) == [runtime(failures).key(msg)]


def test_a_long_job_keeps_its_lease_only_while_it_runs() -> None:
    msg = FakeMsg(1, 1)

    async def job() -> None:
        # Beats until the job ends, however slowly a busy machine schedules them.
        async with asyncio.timeout(10), runtime(FakeFailures()).keep_alive(msg, 0.01):
            while msg.beats < 3:
                await asyncio.sleep(0.005)
        beats = msg.beats
        await asyncio.sleep(0.05)
        assert msg.beats == beats  # no beat after the job

    asyncio.run(job())
