"""The saga's run loop on a real PostgreSQL: a claim's lease outlives a slow step,
and a step that keeps failing for an unclassified reason goes to a person."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import sqlalchemy as sa

from adapters.postgres.claim_keeper import ClaimKeeper
from adapters.postgres.deadlines import SagaDeadlines
from adapters.postgres.saga_feed import SagaFeed
from adapters.postgres.tables import saga_deadlines
from adapters.saga_process import GIVE_UP_AFTER, SagaProcess
from application.commands import ScheduleLesson
from application.payment import Payment, PaymentStatus, Refund, RefundStatus
from application.saga import SagaPolicy
from application.saga_runner import PurchaseSaga
from domain.purchase import Status
from domain.student import StudentProfile


def clear(container) -> None:
    with container.engine.begin() as conn:
        conn.execute(sa.delete(saga_deadlines))


def test_a_renewed_claim_keeps_a_second_process_out_past_its_lease(container) -> None:
    clear(container)
    a = SagaDeadlines(container.engine, owner="saga-a", lease=1)
    b = SagaDeadlines(container.engine, owner="saga-b", lease=1)
    pid = uuid4()
    a.nudge_now([pid])
    [claim] = a.claim(1)
    with ClaimKeeper(a, claim) as keeper:
        time.sleep(2.5)  # a step longer than two leases
        assert b.claim(10) == []
    assert not keeper.lost
    assert a.release(claim, None)
    clear(container)
    a.nudge_now([pid])
    [unkept] = a.claim(1)
    time.sleep(1.5)  # no keeper: the lease lapses and the other process takes it
    assert [c.purchase_id for c in b.claim(10)] == [pid]
    assert not a.renew(unkept)


class BrokenProvider:
    """Every charge fails with an error no retry classifies (a bug's)."""

    def charge(self, reference: str, amount_cents: int, key: str) -> Payment:
        raise RuntimeError("bug")

    def status(self, key: str) -> PaymentStatus:
        raise RuntimeError("bug")

    def refund(self, payment_id: str, amount_cents: int, key: str) -> Refund:
        raise RuntimeError("bug")

    def refund_status(self, key: str) -> RefundStatus:
        raise RuntimeError("bug")


def reserved(container) -> UUID:
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
        StudentProfile.create(student_id="bug-ann", email="a@example.org", name="A")
    )
    view = container.app.reserve_purchase(
        lesson_id=lesson_id,
        student_id="bug-ann",
        request_id=uuid4().hex,
        now=datetime.now(UTC),
        hold_seconds=60,
    )
    return view.purchase_id


def test_a_step_that_keeps_failing_goes_to_review_not_round_for_ever(
    container,
) -> None:
    clear(container)
    deadlines = SagaDeadlines(container.engine, owner="saga-bug", lease=30)
    feed = SagaFeed(container.engine, container.app.recorder, deadlines)
    while feed.pump():  # what earlier tests left in the log
        pass
    process = SagaProcess(
        saga=PurchaseSaga(
            purchases=container.app,
            provider=BrokenProvider(),
            policy=SagaPolicy(webhook_grace=timedelta(0)),  # each round has a step
        ),
        deadlines=deadlines,
        feed=feed,
        poll_seconds=0.1,
    )
    purchase_id = reserved(container)
    for _ in range(GIVE_UP_AFTER):
        deadlines.nudge_now([purchase_id])  # due now, not after the growing pause
        process.round()
    purchase = container.app.get_purchase(purchase_id)
    assert purchase.status is Status.MANUAL_REVIEW
    assert purchase.review_reason == (
        f"the saga's step failed {GIVE_UP_AFTER} times: RuntimeError('bug')"
    )
    assert purchase.hold_active  # held for the person
    deadlines.nudge_now([purchase_id])
    process.round()  # review is final for the saga: nothing fails any more
    assert container.app.get_purchase(purchase_id).version == purchase.version
