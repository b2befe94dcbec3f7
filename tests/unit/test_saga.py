"""The purchase saga: its decisions, and the use cases it drives, end to end.

Run in memory and on PostgreSQL (the use cases save purchase, lesson and
enrollment in one transaction; PostgreSQL is where that is proven).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta
from uuid import uuid4

import pytest

from adapters.memory.students import InMemoryStudentDirectory
from adapters.postgres.database import eventsourcing_env
from application.club import ClubApplication
from application.commands import EnrollStudent
from application.errors import UnknownStudentError
from application.idempotency import KeyReusedError
from application.purchases import enrollment_id_of, purchase_id_from_key
from application.saga import (
    CheckPayment,
    ExpireHold,
    RequireReview,
    SagaPolicy,
    decide,
)
from application.saga_runner import PurchaseSaga
from domain.errors import (
    AlternativePriceError,
    InvalidPurchaseError,
    LessonFullError,
    PaidLessonError,
    PaymentMismatchError,
    RefundNotPendingError,
)
from domain.purchase import Status
from entrypoints.runtime.bootstrap import migrate_database
from tests.unit.fake_payment import Fault
from tests.unit.saga_world import HOLD_SECONDS, World

PAST_HOLD = timedelta(seconds=HOLD_SECONDS + 1)
POLICY = SagaPolicy()


@pytest.fixture(params=["popo", "postgres"])
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    if request.param == "popo":
        yield World()
        return
    url = request.getfixturevalue("database_url")
    migrate_database(url)
    w = World(env=eventsourcing_env(url))
    yield w
    # Closed here, not by the collector: `__del__` may run in one of the pool's
    # own threads, which cannot join itself (an unraisable error in a later test).
    w.app.close()


@pytest.fixture
def popo() -> World:
    return World()


def test_a_purchase_holds_then_pays_then_gets_its_seat_in_one_save(world) -> None:
    lesson_id = world.lesson()
    purchase_id = world.reserve(lesson_id, "ann")
    lesson = world.app.get_lesson(lesson_id)
    assert (lesson.seats_held, lesson.seats_taken) == (1, 0)
    before = world.app.recorder.max_notification_id()
    world.advance(purchase_id)
    purchase = world.get(purchase_id)
    assert purchase.status is Status.CONFIRMED
    lesson = world.app.get_lesson(lesson_id)
    assert (lesson.seats_held, lesson.seats_taken) == (0, 1)
    enrollment = world.app.get_enrollment(enrollment_id_of(purchase_id))
    assert (enrollment.status, enrollment.student_id) == ("confirmed", "ann")
    topics = [
        n.topic
        for n in world.app.recorder.select_notifications(start=before + 1, limit=20)
    ]
    granted = topics.index("domain.purchase:Purchase.AccessGranted")
    assert set(topics[granted : granted + 3]) == {
        "domain.purchase:Purchase.AccessGranted",
        "domain.lesson:Lesson.HoldConverted",
        "domain.enrollment:Enrollment.Confirmed",
    }


def test_a_repeated_reservation_finds_the_first(world) -> None:
    lesson_id = world.lesson()
    first = world.reserve(lesson_id, "ann", key="k")
    assert world.reserve(lesson_id, "ann", key="k") == first
    assert world.app.get_lesson(lesson_id).seats_held == 1
    with pytest.raises(KeyReusedError):
        world.reserve(lesson_id, "bob", key="k")


def test_a_held_last_seat_refuses_another_purchase_and_an_enrollment(world) -> None:
    lesson_id = world.lesson(capacity=1)
    world.reserve(lesson_id, "ann")
    with pytest.raises(LessonFullError):
        world.reserve(lesson_id, "bob")
    with pytest.raises(PaidLessonError):  # a paid seat is never taken by enrolling
        world.app.enroll(
            EnrollStudent(lesson_id=lesson_id, student_id="cid", request_id="r")
        )


def test_a_free_lesson_is_not_bought(popo) -> None:
    with pytest.raises(InvalidPurchaseError, match="enroll instead"):
        popo.reserve(popo.lesson(price_cents=0), "ann")


def test_a_timeout_checks_and_never_compensates_then_a_person_decides(popo) -> None:
    popo.provider.status_down = True
    purchase_id = popo.charged_with(Fault.LOST_BEFORE)
    assert popo.get(purchase_id).status is Status.PAYMENT_CHECKING
    for _ in range(popo.policy.max_checks + 2):
        popo.advance(purchase_id, PAST_HOLD)  # far past the hold's expiry
        purchase = popo.get(purchase_id)
        assert purchase.hold_active
        assert popo.app.get_lesson(purchase.lesson_id).seats_held == 1
        assert purchase.refund_key is None
    assert purchase.status is Status.MANUAL_REVIEW
    assert purchase.review_reason == "payment still unsettled after 8 checks"
    assert popo.provider.refund_calls.total() == 0


def test_a_check_that_finds_the_capture_grants_access_even_past_the_hold(popo) -> None:
    purchase_id = popo.charged_with(Fault.LOST_AFTER)  # captured, answer lost
    assert popo.get(purchase_id).status is Status.PAYMENT_CHECKING
    popo.advance(purchase_id, PAST_HOLD)
    assert popo.get(purchase_id).status is Status.CONFIRMED
    assert len(popo.provider.charges) == 1


def test_a_check_that_finds_nothing_charges_again_under_the_same_key(popo) -> None:
    purchase_id = popo.charged_with(Fault.LOST_BEFORE)
    popo.advance(purchase_id, timedelta(minutes=1))
    assert popo.get(purchase_id).status is Status.CONFIRMED
    assert list(popo.provider.charges) == [popo.get(purchase_id).payment_key]


def test_a_transient_failure_charges_again_later(popo) -> None:
    purchase_id = popo.charged_with(Fault.TRANSIENT)
    purchase = popo.get(purchase_id)
    assert purchase.status is Status.RESERVED
    assert purchase.next_charge_at is not None
    assert purchase.next_charge_at > popo.now
    popo.advance(purchase_id, timedelta(seconds=2))
    assert popo.get(purchase_id).status is Status.CONFIRMED


def test_a_decline_releases_the_seat(world) -> None:
    lesson_id = world.lesson()
    purchase_id = world.reserve(lesson_id, "ann")
    world.provider.decline_next = True
    world.advance(purchase_id)
    assert world.get(purchase_id).status is Status.DECLINED
    assert world.app.get_lesson(lesson_id).seats_held == 0


def late_payment(w: World) -> tuple:
    """Ann's payment is still pending when her hold expires; Bob takes the seat;
    then Ann pays (the webhook comes late)."""
    lesson_id = w.lesson(capacity=1)
    purchase_id = w.reserve(lesson_id, "ann")
    w.provider.capture_at_once = False
    w.advance(purchase_id)
    assert w.get(purchase_id).status is Status.PAYMENT_PENDING
    w.advance(purchase_id, PAST_HOLD)
    assert w.get(purchase_id).status is Status.EXPIRED
    w.sold_elsewhere(lesson_id, "bob")
    w.provider.pay(w.get(purchase_id).payment_key)
    w.webhook_captured(purchase_id)
    w.advance(purchase_id)
    return lesson_id, purchase_id


def test_a_late_payment_is_offered_an_alternative_then_refunded_once(world) -> None:
    lesson_id, purchase_id = late_payment(world)
    purchase = world.get(purchase_id)
    assert purchase.status is Status.ALTERNATIVE_OFFERED
    world.webhook_captured(purchase_id)  # the same webhook again
    world.advance(purchase_id, world.policy.offer_window)
    purchase = world.get(purchase_id)
    assert purchase.status is Status.REFUNDED
    assert purchase.refund_key == f"refund-{purchase.payment_id}"
    world.webhook_captured(purchase_id)  # and once more, after the refund
    world.advance(purchase_id, timedelta(hours=1))
    assert world.provider.refunds_per_payment() == {purchase.payment_id: 1}
    assert world.provider.refund_calls.total() == 1
    lesson = world.app.get_lesson(lesson_id)
    assert (lesson.seats_taken, lesson.seats_held) == (1, 0)  # Bob's; no seat added
    assert world.provider.captured_cents() - world.provider.refunded_cents() == 0


def test_with_no_offer_window_a_late_payment_is_refunded_at_once(popo) -> None:
    popo.policy = SagaPolicy(offer_window=timedelta(0))
    popo._bind()
    _, purchase_id = late_payment(popo)
    assert popo.get(purchase_id).status is Status.REFUNDED


def test_consent_buys_a_new_seat_elsewhere_and_never_revives_the_hold(world) -> None:
    lesson_id, purchase_id = late_payment(world)
    other = world.lesson(capacity=1)
    view = world.purchases.accept_alternative(
        purchase_id, lesson_id=other, now=world.now
    )
    assert view.status == "alternative_accepted"
    again = world.purchases.accept_alternative(
        purchase_id, lesson_id=other, now=world.now
    )
    assert again.alternative_purchase_id == view.alternative_purchase_id
    new = world.get(view.alternative_purchase_id)
    assert (new.status, new.lesson_id, new.funded_by) == (
        Status.CONFIRMED,
        other,
        purchase_id,
    )
    assert world.app.get_lesson(other).seats_taken == 1
    assert world.app.get_lesson(lesson_id).seats_taken == 1  # still only Bob
    world.advance(purchase_id, timedelta(days=1))
    assert world.provider.refund_calls.total() == 0


def test_a_full_or_dearer_alternative_is_refused_and_the_offer_stands(popo) -> None:
    _, purchase_id = late_payment(popo)
    full = popo.lesson(capacity=1)
    popo.sold_elsewhere(full, "cid")
    with pytest.raises(LessonFullError):
        popo.purchases.accept_alternative(purchase_id, lesson_id=full, now=popo.now)
    dearer = popo.lesson(price_cents=9900)
    with pytest.raises(AlternativePriceError):
        popo.purchases.accept_alternative(purchase_id, lesson_id=dearer, now=popo.now)
    assert popo.get(purchase_id).status is Status.ALTERNATIVE_OFFERED
    assert popo.app.get_lesson(full).seats_taken == 1


def test_refunds_down_keep_the_intent_visible_then_a_person_decides(popo) -> None:
    popo.policy = SagaPolicy(offer_window=timedelta(0))
    popo._bind()
    popo.provider.refunds_down = True
    _, purchase_id = late_payment(popo)
    delays = []
    for _ in range(popo.policy.max_refund_attempts):
        purchase = popo.get(purchase_id)
        assert purchase.status is Status.REFUND_PENDING
        delays.append(purchase.next_refund_at - popo.now)
        popo.advance(purchase_id, purchase.next_refund_at - popo.now)
    purchase = popo.get(purchase_id)
    assert purchase.status is Status.MANUAL_REVIEW
    assert purchase.refund_key == f"refund-{purchase.payment_id}"
    assert delays[-1] > delays[0]  # backing off
    popo.provider.refunds_down = False
    popo.purchases.record_refunded(purchase_id, refund_id="ref-by-operator")
    assert popo.get(purchase_id).status is Status.REFUNDED


def test_a_refund_accepted_but_unanswered_is_not_made_twice(popo) -> None:
    popo.policy = SagaPolicy(offer_window=timedelta(0))
    popo._bind()
    popo.provider.refund_fault = Fault.LOST_AFTER
    _, purchase_id = late_payment(popo)
    assert popo.get(purchase_id).status is Status.REFUND_PENDING
    popo.advance(purchase_id, timedelta(minutes=10))
    assert popo.get(purchase_id).status is Status.REFUNDED
    assert len(popo.provider.refunds) == 1


def test_a_restarted_saga_continues_from_what_was_recorded(popo) -> None:
    purchase_id = popo.charged_with(Fault.LOST_AFTER)
    popo.restarted()
    assert popo.get(purchase_id).status is Status.PAYMENT_CHECKING
    popo.advance(purchase_id, timedelta(minutes=1))
    assert popo.get(purchase_id).status is Status.CONFIRMED
    assert len(popo.provider.charges) == 1


def test_decide_expires_a_pending_hold_but_never_a_checking_one(popo) -> None:
    purchase_id = popo.reserve(popo.lesson(), "ann")
    popo.provider.capture_at_once = False
    popo.advance(purchase_id)
    late = popo.now + PAST_HOLD
    assert decide(popo.get(purchase_id), late, popo.policy).command == ExpireHold()
    other = popo.reserve(popo.lesson(), "bob")
    popo.provider.next_charge_fault = Fault.LOST_BEFORE
    popo.advance(other)
    checking = popo.get(other)
    assert decide(checking, late, popo.policy).command == CheckPayment()


def test_decide_sends_an_unequal_capture_to_a_person(popo) -> None:
    purchase_id = popo.reserve(popo.lesson(), "ann")
    popo.purchases.request_payment(purchase_id, next_check_at=popo.now)
    popo.purchases.record_payment_captured(
        purchase_id, payment_id="pay-x", amount_cents=1
    )
    decision = decide(popo.get(purchase_id), popo.now, popo.policy)
    assert isinstance(decision.command, RequireReview)


def test_backoff_doubles_up_to_its_ceiling_with_jitter_in_the_upper_half() -> None:
    policy = SagaPolicy()
    rng = random.Random(1)
    first, ceiling = timedelta(seconds=2), timedelta(seconds=60)
    for attempt in range(10):
        top = min(ceiling, first * 2**attempt)
        drawn = policy.backoff(attempt, first, ceiling, rng)
        assert top / 2 <= drawn <= top
    draws = {policy.backoff(3, first, ceiling, rng) for _ in range(20)}
    assert len(draws) > 1  # jitter: processes do not retry in lockstep


def test_a_reservation_survives_no_unknown_purchase(popo) -> None:
    with pytest.raises(Exception, match="does not exist"):
        popo.purchases.get_purchase(uuid4())


class StaleOnce:
    """The first read is of a purchase another saga process has moved on since."""

    def __init__(self, app, stale) -> None:
        self._app = app
        self.stale = stale

    def get_purchase(self, purchase_id):
        if self.stale is not None:
            stale, self.stale = self.stale, None
            return stale
        return self._app.get_purchase(purchase_id)

    def __getattr__(self, name):
        return getattr(self._app, name)


@pytest.mark.parametrize("racing_capture", [False, True])
def test_a_saga_that_decided_on_stale_state_decides_again(popo, racing_capture) -> None:
    purchase_id = popo.reserve(popo.lesson(), "ann")
    if racing_capture:  # the hold is due, but a webhook's capture comes first
        popo.provider.capture_at_once = False
        popo.advance(purchase_id)
        popo.now += PAST_HOLD
    stale = popo.get(purchase_id)
    if racing_capture:
        popo.provider.pay(stale.payment_key)
        popo.webhook_captured(purchase_id)
    else:  # the other saga process completed the purchase
        popo.advance(purchase_id)
    other = PurchaseSaga(
        purchases=StaleOnce(popo.app, stale), provider=popo.provider, policy=POLICY
    )
    other.advance(purchase_id, popo.now)
    assert popo.get(purchase_id).status is Status.CONFIRMED
    assert len(popo.provider.charges) == 1


def test_a_webhook_key_names_its_purchase_or_nothing(popo) -> None:
    purchase_id = popo.reserve(popo.lesson(), "ann")
    key = popo.get(purchase_id).payment_key
    assert purchase_id_from_key(key) == purchase_id
    for foreign in ["", "purchase-", "purchase-not-a-uuid", f"refund-{purchase_id}"]:
        assert purchase_id_from_key(foreign) is None


def test_hostile_facts_record_nothing(popo) -> None:
    purchase_id = popo.reserve(popo.lesson(), "ann")
    popo.advance(purchase_id)
    version = popo.get(purchase_id).version
    with pytest.raises(PaymentMismatchError):
        popo.purchases.record_payment_captured(
            purchase_id, payment_id="pay-forged", amount_cents=2500
        )
    popo.purchases.record_payment_declined(purchase_id, reason="stale, out of order")
    with pytest.raises(RefundNotPendingError):
        popo.purchases.record_refunded(purchase_id, refund_id="ref-forged")
    assert popo.get(purchase_id).version == version
    assert popo.get(purchase_id).status is Status.CONFIRMED


def test_the_view_says_what_happens_next_and_when(popo) -> None:
    purchase_id = popo.charged_with(Fault.LOST_BEFORE)
    view = popo.purchases.view_purchase(purchase_id)
    assert view.status == "payment_checking"
    assert view.seat_held
    assert str(view.next_check_at) in view.next_step
    assert "payments on-call" in view.next_step


def test_a_check_that_finds_the_charge_pending_ends_the_unknown(popo) -> None:
    """Pending is a known answer: back to payment_pending, where the hold's expiry
    applies again (a capture after it is a late payment)."""
    lesson_id = popo.lesson()
    purchase_id = popo.reserve(lesson_id, "ann")
    popo.provider.capture_at_once = False
    popo.provider.next_charge_fault = Fault.LOST_AFTER
    popo.advance(purchase_id)
    assert popo.get(purchase_id).status is Status.PAYMENT_CHECKING
    popo.advance(purchase_id, timedelta(minutes=1))
    assert popo.get(purchase_id).status is Status.PAYMENT_PENDING
    popo.advance(purchase_id, PAST_HOLD)
    purchase = popo.get(purchase_id)
    assert (purchase.status, purchase.payment_open) == (Status.EXPIRED, True)
    assert popo.app.get_lesson(lesson_id).seats_held == 0


def test_a_student_slow_to_pay_keeps_the_seat_until_the_hold_not_a_review(popo):
    purchase_id = popo.reserve(popo.lesson(), "ann")
    popo.provider.capture_at_once = False
    popo.advance(purchase_id)
    while popo.now + timedelta(minutes=1) < popo.get(purchase_id).hold_expires_at:
        popo.advance(purchase_id, timedelta(seconds=30))
        assert popo.get(purchase_id).status is Status.PAYMENT_PENDING
    assert popo.get(purchase_id).checks > popo.policy.max_checks
    popo.provider.pay(popo.get(purchase_id).payment_key)
    popo.advance(purchase_id, timedelta(seconds=30))
    assert popo.get(purchase_id).status is Status.CONFIRMED


def test_a_student_without_a_profile_is_told_to_create_one_first() -> None:
    popo = World(app=ClubApplication(students=InMemoryStudentDirectory()))
    with pytest.raises(UnknownStudentError, match="PUT /students/ann first"):
        popo.reserve(popo.lesson(), "ann")
    assert popo.app.recorder.max_notification_id() == 1  # only the lesson
