"""An operator settles a purchase in manual review; the saga carries on from it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from application.purchases import enrollment_id_of
from domain.errors import LessonFullError, NotInReviewError, ResolutionRefusedError
from domain.purchase import Purchase, Resolution, Status
from tests.unit.fake_payment import Fault
from tests.unit.saga_world import World
from tests.unit.test_saga import late_payment

OPERATOR = "ops-ann"


@pytest.fixture
def popo() -> World:
    return World()


def resolve(world: World, purchase_id, decision: Resolution, reason: str = "checked"):
    return world.app.resolve_review(
        purchase_id, decision=decision, operator=OPERATOR, reason=reason, now=world.now
    )


def in_review_unpaid(world: World):
    """A charge lost before it arrived, then a person asked to look."""
    lesson_id = world.lesson()
    purchase_id = world.reserve(lesson_id, "ann")
    world.provider.next_charge_fault = Fault.LOST_BEFORE
    world.advance(purchase_id)
    world.app.require_review(purchase_id, reason="provider unsure", owner="on-call")
    return lesson_id, purchase_id


def test_cancel_releases_the_seat_and_charges_nothing(popo: World) -> None:
    lesson_id, purchase_id = in_review_unpaid(popo)
    assert popo.app.get_lesson(lesson_id).seats_held == 1
    view = resolve(popo, purchase_id, Resolution.CANCEL, "student gave up")
    assert view.status == "cancelled"
    lesson = popo.app.get_lesson(lesson_id)
    assert (lesson.seats_held, lesson.seats_taken) == (0, 0)
    events = popo.app.repository.get(purchase_id)  # the recorded decision
    assert isinstance(events, Purchase)
    assert (events.resolved_by, events.resolution) == (OPERATOR, "cancel")
    popo.advance(purchase_id, timedelta(hours=1))
    assert popo.get(purchase_id).status is Status.CANCELLED
    assert popo.provider.captured_cents() == 0


def test_only_a_purchase_in_review_is_resolved_naming_its_state(popo: World) -> None:
    lesson_id = popo.lesson()
    purchase_id = popo.reserve(lesson_id, "ann")
    popo.advance(purchase_id)
    with pytest.raises(NotInReviewError, match="is confirmed"):
        resolve(popo, purchase_id, Resolution.REFUND)


def test_a_decision_that_does_not_fit_the_money_names_the_one_that_does(
    popo: World,
) -> None:
    _, unpaid = in_review_unpaid(popo)
    for decision in (Resolution.REFUND, Resolution.CONFIRM):
        with pytest.raises(ResolutionRefusedError, match="--cancel"):
            resolve(popo, unpaid, decision)
    _, paid = late_payment(popo)
    popo.app.require_review(paid, reason="student called", owner="on-call")
    with pytest.raises(ResolutionRefusedError, match="--refund or --confirm"):
        resolve(popo, paid, Resolution.CANCEL)
    with pytest.raises(ResolutionRefusedError, match="operator and reason"):
        resolve(popo, paid, Resolution.REFUND, reason="  ")


def test_refund_records_the_intent_and_the_saga_refunds_once(popo: World) -> None:
    _, purchase_id = late_payment(popo)
    popo.app.require_review(purchase_id, reason="student called", owner="on-call")
    view = resolve(popo, purchase_id, Resolution.REFUND)
    assert view.status == "refund_pending"
    popo.advance(purchase_id, timedelta(seconds=1))
    purchase = popo.get(purchase_id)
    assert purchase.status is Status.REFUNDED
    assert popo.provider.refunds_per_payment() == {purchase.payment_id: 1}


def test_refund_after_a_failed_refund_tries_the_same_key_afresh(popo: World) -> None:
    _, purchase_id = late_payment(popo)
    popo.provider.refunds_down = True
    popo.advance(purchase_id, popo.policy.offer_window)
    for _ in range(popo.policy.max_refund_attempts + 1):
        popo.advance(purchase_id, popo.policy.max_retry_delay)
    before = popo.get(purchase_id)
    assert before.status is Status.MANUAL_REVIEW
    popo.provider.refunds_down = False
    resolve(popo, purchase_id, Resolution.REFUND, "provider is back")
    popo.advance(purchase_id, timedelta(seconds=1))
    after = popo.get(purchase_id)
    assert after.status is Status.REFUNDED
    assert after.refund_key == before.refund_key
    assert popo.provider.refunds_per_payment() == {after.payment_id: 1}


def test_confirm_turns_the_held_seat_into_the_enrollment(popo: World) -> None:
    lesson_id = popo.lesson()
    purchase_id = popo.reserve(lesson_id, "ann")
    popo.app.request_payment(purchase_id, next_check_at=popo.now)
    popo.app.record_payment_captured(purchase_id, payment_id="pay-x", amount_cents=99)
    popo.advance(purchase_id)  # 99 cents for a 2500-cent seat: a person decides
    assert popo.get(purchase_id).status is Status.MANUAL_REVIEW
    view = resolve(popo, purchase_id, Resolution.CONFIRM, "student paid the rest")
    assert view.status == "confirmed"
    enrollment = popo.app.get_enrollment(enrollment_id_of(purchase_id))
    assert enrollment.status == "confirmed"
    lesson = popo.app.get_lesson(lesson_id)
    assert (lesson.seats_held, lesson.seats_taken) == (0, 1)


def test_confirm_after_the_hold_went_needs_a_free_seat(popo: World) -> None:
    _, purchase_id = late_payment(popo)  # Bob took the only seat
    popo.app.require_review(purchase_id, reason="student called", owner="on-call")
    with pytest.raises(LessonFullError):
        resolve(popo, purchase_id, Resolution.CONFIRM)
    assert popo.get(purchase_id).status is Status.MANUAL_REVIEW


def test_confirm_after_the_hold_went_takes_a_free_seat(popo: World) -> None:
    lesson_id = popo.lesson(capacity=2)
    purchase_id = popo.reserve(lesson_id, "ann")
    popo.provider.capture_at_once = False
    popo.advance(purchase_id)
    popo.advance(purchase_id, timedelta(seconds=900))  # the hold expires
    popo.provider.pay(popo.get(purchase_id).payment_key)
    popo.webhook_captured(purchase_id)
    popo.app.require_review(purchase_id, reason="student called", owner="on-call")
    view = resolve(popo, purchase_id, Resolution.CONFIRM, "seat still free")
    assert view.status == "confirmed"
    lesson = popo.app.get_lesson(lesson_id)
    assert (lesson.seats_held, lesson.seats_taken) == (0, 1)
