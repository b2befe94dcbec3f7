"""The saga's deadline table on a real PostgreSQL: claimed once, by lease, fenced.

Two `SagaDeadlines` stand for two saga processes sharing the table.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import sqlalchemy as sa

from adapters.postgres.deadlines import Claim, SagaDeadlines
from adapters.postgres.saga_feed import SagaFeed
from adapters.postgres.tables import saga_deadlines
from application.commands import ScheduleLesson
from domain.student import StudentProfile


def two(container, lease: float = 30) -> tuple[SagaDeadlines, SagaDeadlines]:
    return (
        SagaDeadlines(container.engine, owner="saga-a", lease=lease),
        SagaDeadlines(container.engine, owner="saga-b", lease=lease),
    )


def clear(container) -> None:
    with container.engine.begin() as conn:
        conn.execute(sa.delete(saga_deadlines))


def one_claimed(container) -> tuple[SagaDeadlines, UUID, Claim]:
    """An empty table, then one purchase nudged and claimed by one process."""
    clear(container)
    deadlines, _ = two(container)
    pid = uuid4()
    deadlines.nudge_now([pid])
    [claim] = deadlines.claim(10)
    return deadlines, pid, claim


def test_each_due_purchase_is_claimed_by_exactly_one_of_two_racing_processes(
    container,
) -> None:
    clear(container)
    a, b = two(container)
    purchases = [uuid4() for _ in range(200)]
    a.nudge_now(purchases)
    claimed: dict[str, list[UUID]] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def drain(name: str, deadlines: SagaDeadlines) -> None:
        start.wait()
        while batch := deadlines.claim(7):
            claimed[name] += [c.purchase_id for c in batch]

    threads = [
        threading.Thread(target=drain, args=("a", a)),
        threading.Thread(target=drain, args=("b", b)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    everything = claimed["a"] + claimed["b"]
    assert sorted(everything) == sorted(purchases)  # each once, none lost
    assert claimed["a"]
    assert claimed["b"]


def test_a_claim_whose_lease_ran_out_is_taken_over_and_the_old_release_is_void(
    container,
) -> None:
    clear(container)
    old, new = two(container, lease=0.5)
    pid = uuid4()
    old.nudge_now([pid])
    [stale] = old.claim(10)
    assert new.claim(10) == []  # held
    time.sleep(0.7)
    [fresh] = new.claim(10)
    assert fresh.purchase_id == pid
    later = datetime.now(UTC) + timedelta(hours=1)
    # The paused process wakes and releases: its write must not land.
    assert old.release(stale, datetime.now(UTC)) is False
    assert new.release(fresh, later) is True
    assert new.due_at(pid) == later


def test_a_nudge_while_claimed_is_not_overwritten_by_the_release(container) -> None:
    deadlines, pid, claim = one_claimed(container)
    deadlines.nudge_now([pid])  # a webhook's fact, while the saga works
    assert deadlines.release(claim, datetime.now(UTC) + timedelta(hours=1))
    due = deadlines.due_at(pid)
    assert due is not None
    assert due <= datetime.now(UTC)
    assert [c.purchase_id for c in deadlines.claim(10)] == [pid]


def test_nothing_due_is_never_claimed(container) -> None:
    deadlines, pid, claim = one_claimed(container)
    assert deadlines.release(claim, None)
    assert deadlines.claim(10) == []
    assert deadlines.due_at(pid) is None


def test_a_reservation_nobody_nudged_is_found_in_the_notification_log(
    container,
) -> None:
    """The API may die between the reservation's commit and its nudge."""
    clear(container)
    deadlines, _ = two(container)
    feed = SagaFeed(container.engine, container.app.recorder, deadlines)
    while feed.pump():  # what earlier tests left in the log
        pass
    clear(container)
    lesson_id = uuid4()
    container.app.schedule_lesson(
        ScheduleLesson(
            lesson_id=lesson_id,
            title="Intensive",
            capacity=3,
            starts_at=datetime(2027, 1, 10, tzinfo=UTC),
            price_cents=2500,
        )
    )
    container.students.save(
        StudentProfile.create(student_id="feed-ann", email="a@example.org", name="A")
    )
    view = container.app.reserve_purchase(
        lesson_id=lesson_id,
        student_id="feed-ann",
        request_id=uuid4().hex,
        now=datetime.now(UTC),
        hold_seconds=60,
    )
    assert deadlines.due_at(view.purchase_id) is None  # nobody nudged it
    assert feed.pump() == 1
    assert [c.purchase_id for c in deadlines.claim(10)] == [view.purchase_id]
    assert feed.pump() == 0  # the position moved past it


def test_the_feed_moves_past_events_that_wake_nobody(container) -> None:
    """A long run of enrollments after the last purchase is scanned once."""
    deadlines, _ = two(container)
    feed = SagaFeed(container.engine, container.app.recorder, deadlines)
    while feed.pump():
        pass
    for _ in range(3):
        container.app.schedule_lesson(
            ScheduleLesson(
                lesson_id=uuid4(),
                title="Yoga",
                capacity=3,
                starts_at=datetime(2027, 1, 10, tzinfo=UTC),
                price_cents=0,
            )
        )
    assert feed.pump() == 0
    assert feed.position() == container.app.recorder.max_notification_id()


def test_a_skewed_saga_host_keeps_its_wait_on_the_databases_clock(container) -> None:
    """A host a day behind computes "in an hour" as yesterday's time: written as
    it is, the deadline would be long past and claimed again at once, for ever."""
    deadlines, pid, claim = one_claimed(container)
    behind = datetime.now(UTC) - timedelta(days=1)
    assert deadlines.release(claim, behind + timedelta(hours=1), as_of=behind)
    with container.engine.connect() as conn:
        db_now = conn.execute(sa.select(sa.func.now())).scalar_one()
    due = deadlines.due_at(pid)
    assert due is not None
    assert timedelta(minutes=59) < due - db_now <= timedelta(hours=1)
    assert deadlines.claim(10) == []
