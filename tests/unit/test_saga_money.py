"""Money that must not strand: a cancelled bought seat is refunded once, and an
answer the saga cannot act on goes to a person with its reason, never into an
endless retry."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest

from application.commands import CancelEnrollment, EnrollStudent
from application.purchases import enrollment_id_of
from domain.purchase import Status, refund_key_for
from tests.unit.saga_world import World


@pytest.fixture
def popo() -> World:
    return World()


def confirmed(world: World) -> tuple[UUID, UUID]:
    lesson_id = world.lesson()
    purchase_id = world.reserve(lesson_id, "ann")
    world.advance(purchase_id)
    assert world.get(purchase_id).status is Status.CONFIRMED
    return lesson_id, purchase_id


def test_cancelling_a_bought_seat_refunds_its_payment_once(popo: World) -> None:
    lesson_id, purchase_id = confirmed(popo)
    enrollment_id = enrollment_id_of(purchase_id)
    for _ in range(2):  # the repeat changes nothing
        view = popo.app.cancel_enrollment(
            CancelEnrollment(enrollment_id=enrollment_id, now=popo.now)
        )
        assert view.status == "cancelled"
    purchase = popo.get(purchase_id)
    assert purchase.status is Status.REFUND_PENDING
    assert purchase.refund_key == refund_key_for(str(purchase.payment_id))
    lesson = popo.app.get_lesson(lesson_id)
    assert (lesson.seats_held, lesson.seats_taken) == (0, 0)
    popo.advance(purchase_id, timedelta(seconds=1))
    assert popo.get(purchase_id).status is Status.REFUNDED
    assert popo.provider.refunds_per_payment() == {purchase.payment_id: 1}
    assert popo.provider.captured_cents() == popo.provider.refunded_cents()


def test_cancelling_a_free_seat_touches_no_purchase(popo: World) -> None:
    lesson_id = popo.lesson(price_cents=0)
    view = popo.app.enroll(
        EnrollStudent(lesson_id=lesson_id, student_id="ann", request_id="k-1")
    )
    popo.app.cancel_enrollment(CancelEnrollment(enrollment_id=view.enrollment_id))
    assert popo.provider.refund_calls.total() == 0


def test_an_unusable_charge_answer_sends_the_purchase_to_a_person(popo: World) -> None:
    purchase_id = popo.reserve(popo.lesson(), "ann")
    popo.provider.unusable_answer = True
    popo.advance(purchase_id)  # no exception: the saga settled what it could
    purchase = popo.get(purchase_id)
    assert purchase.status is Status.MANUAL_REVIEW
    assert purchase.review_reason is not None
    assert "payment id has 300 characters" in purchase.review_reason
    assert purchase.hold_active  # what is held stays held for the person


def test_an_unusable_refund_answer_sends_the_purchase_to_a_person(popo: World) -> None:
    _, purchase_id = confirmed(popo)
    popo.app.cancel_enrollment(
        CancelEnrollment(
            enrollment_id=enrollment_id_of(purchase_id),
            now=popo.now,
        )
    )
    popo.provider.unusable_answer = True
    popo.advance(purchase_id, timedelta(seconds=1))
    purchase = popo.get(purchase_id)
    assert purchase.status is Status.MANUAL_REVIEW
    assert "refund answered, unusable" in str(purchase.review_reason)
