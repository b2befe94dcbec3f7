"""The Purchase aggregate: given its facts, when a command, then facts or an error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from application.email import check_key
from domain.errors import (
    HoldNotActiveError,
    HoldNotDueError,
    InvalidPurchaseError,
    NoAlternativeOfferedError,
    NoCapturedPaymentError,
    NotAwaitingPaymentError,
    NotRefundableError,
    PaymentMismatchError,
    PaymentStillCheckingError,
    RefundNotPendingError,
    StepNotDueError,
)
from domain.purchase import Purchase, Status, refund_key_for
from tests.unit.given import given, when

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HOLD = timedelta(minutes=15)
LATER = NOW + HOLD + timedelta(seconds=1)


def reserved() -> Purchase:
    return Purchase.reserve(
        purchase_id=uuid4(),
        lesson_id=uuid4(),
        student_id="ann",
        request_id="key-1",
        price_cents=2500,
        now=NOW,
        hold=HOLD,
    )


def requested(p: Purchase) -> None:
    p.request_payment(next_check_at=NOW + timedelta(seconds=30))


def timed_out(p: Purchase) -> None:
    p.record_outcome_unknown(
        reason="timeout", next_check_at=NOW + timedelta(seconds=2), owner="on-call"
    )


def captured(p: Purchase) -> None:
    p.record_captured(payment_id="pay-1", amount_cents=2500)


def expired(p: Purchase) -> None:
    p.expire_hold(now=LATER)


def test_reserve_fixes_the_price_and_the_hold_expiry() -> None:
    purchase = reserved()
    [event] = purchase.collect_events()
    assert isinstance(event, Purchase.Reserved)
    assert (event.price_cents, event.hold_expires_at) == (2500, NOW + HOLD)
    assert purchase.status is Status.RESERVED
    assert purchase.hold_active


@pytest.mark.parametrize(
    ("price", "hold", "now"),
    [
        (0, HOLD, NOW),  # a free lesson is enrolled in, not bought
        (-1, HOLD, NOW),
        (100, timedelta(0), NOW),
        (100, timedelta(days=2), NOW),
        (100, HOLD, NOW.replace(tzinfo=None)),
    ],
)
def test_reserve_refuses_what_it_cannot_keep(price, hold, now) -> None:
    with pytest.raises(InvalidPurchaseError):
        Purchase.reserve(
            purchase_id=uuid4(), lesson_id=uuid4(), student_id="ann",
            request_id="k", price_cents=price, now=now, hold=hold,
        )  # fmt: skip


def test_payment_is_requested_once_per_reservation() -> None:
    purchase = given(reserved, requested)
    assert purchase.status is Status.PAYMENT_PENDING
    assert purchase.payment_open
    with pytest.raises(NotAwaitingPaymentError):
        requested(purchase)


def test_a_timeout_moves_to_checking_with_an_owner_and_a_next_check() -> None:
    purchase = given(reserved, requested)
    [event] = when(purchase, timed_out)
    assert isinstance(event, Purchase.PaymentOutcomeUnknown)
    assert purchase.status is Status.PAYMENT_CHECKING
    assert purchase.check_owner == "on-call"
    assert purchase.next_check_at == NOW + timedelta(seconds=2)
    assert purchase.hold_active  # not a compensation


def test_checking_never_releases_the_seat_even_past_the_hold() -> None:
    purchase = given(reserved, requested, timed_out)
    with pytest.raises(PaymentStillCheckingError):
        expired(purchase)
    assert purchase.hold_active


def test_checking_never_refunds() -> None:
    purchase = given(reserved, requested, timed_out)
    with pytest.raises(NoCapturedPaymentError):
        purchase.request_refund(now=LATER)


def test_the_hold_expires_only_at_its_time() -> None:
    purchase = given(reserved, requested)
    with pytest.raises(HoldNotDueError):
        purchase.expire_hold(now=NOW + HOLD - timedelta(seconds=1))
    [event] = when(purchase, expired)
    assert isinstance(event, Purchase.HoldExpired)
    assert purchase.status is Status.EXPIRED
    assert not purchase.hold_active
    assert purchase.payment_open  # the charge is still watched


def test_an_expired_hold_cannot_expire_again() -> None:
    purchase = given(reserved, expired)
    with pytest.raises(HoldNotActiveError):
        expired(purchase)


def test_a_repeated_capture_records_nothing() -> None:
    purchase = given(reserved, requested, captured)
    assert when(purchase, captured) == []


def test_a_capture_naming_another_payment_is_refused() -> None:
    purchase = given(reserved, requested, captured)
    with pytest.raises(PaymentMismatchError):
        purchase.record_captured(payment_id="pay-2", amount_cents=2500)


def test_no_access_without_a_captured_payment() -> None:
    purchase = given(reserved, requested)
    with pytest.raises(NoCapturedPaymentError):
        purchase.grant_access(enrollment_id=uuid4())


def test_a_late_capture_grants_no_access() -> None:
    purchase = given(reserved, requested, expired, captured)
    assert purchase.status is Status.CAPTURED
    with pytest.raises(HoldNotActiveError):
        purchase.grant_access(enrollment_id=uuid4())


def test_access_converts_the_hold() -> None:
    purchase = given(reserved, requested, captured)
    enrollment_id = uuid4()
    [event] = when(purchase, lambda p: p.grant_access(enrollment_id=enrollment_id))
    assert isinstance(event, Purchase.AccessGranted)
    assert (purchase.status, purchase.enrollment_id) == (
        Status.CONFIRMED,
        enrollment_id,
    )


def test_a_late_payment_gets_one_refund_intent_keyed_by_the_payment() -> None:
    purchase = given(reserved, requested, expired, captured)
    [event] = when(purchase, lambda p: p.request_refund(now=LATER))
    assert isinstance(event, Purchase.RefundRequested)
    assert (event.refund_key, event.amount_cents) == ("refund-pay-1", 2500)
    assert purchase.status is Status.REFUND_PENDING
    assert when(purchase, lambda p: p.request_refund(now=LATER)) == []


def test_a_confirmed_purchase_is_not_refunded_by_the_saga() -> None:
    purchase = given(
        reserved, requested, captured, lambda p: p.grant_access(enrollment_id=uuid4())
    )
    with pytest.raises(NotRefundableError):
        purchase.request_refund(now=LATER)


def test_a_refund_is_recorded_only_after_its_intent() -> None:
    purchase = given(reserved, requested, expired, captured)
    with pytest.raises(RefundNotPendingError):
        purchase.record_refunded(refund_id="ref-1")
    purchase.request_refund(now=LATER)
    purchase.record_refunded(refund_id="ref-1")
    assert purchase.status is Status.REFUNDED
    purchase.collect_events()
    assert when(purchase, lambda p: p.record_refunded(refund_id="ref-1")) == []


def test_an_alternative_is_taken_only_while_offered() -> None:
    purchase = given(reserved, requested, expired, captured)
    with pytest.raises(NoAlternativeOfferedError):
        purchase.accept_alternative(lesson_id=uuid4(), purchase_id=uuid4())
    purchase.offer_alternative(offer_expires_at=LATER + HOLD)
    purchase.accept_alternative(lesson_id=uuid4(), purchase_id=uuid4())
    assert purchase.status is Status.ALTERNATIVE_ACCEPTED


def test_a_decline_releases_the_seat() -> None:
    purchase = given(reserved, requested)
    [event] = when(purchase, lambda p: p.record_declined(reason="card declined"))
    assert isinstance(event, Purchase.PaymentDeclined)
    assert (purchase.status, purchase.hold_active) == (Status.DECLINED, False)
    with pytest.raises(NotAwaitingPaymentError):
        purchase.record_declined(reason="again")


def test_a_charge_not_taken_goes_back_to_reserved_with_a_retry_time() -> None:
    purchase = given(reserved, requested, timed_out)
    retry = NOW + timedelta(seconds=5)
    when(purchase, lambda p: p.record_not_taken(reason="not found", retry_at=retry))
    assert (purchase.status, purchase.next_charge_at) == (Status.RESERVED, retry)
    assert purchase.hold_active


def test_checks_are_scheduled_only_while_a_payment_is_open() -> None:
    purchase = given(reserved)
    with pytest.raises(NotAwaitingPaymentError):
        purchase.schedule_check(reason="pending", next_check_at=LATER, due_at=None)


def test_money_moved_to_another_purchase_is_not_refunded_from_it() -> None:
    def transferred(p: Purchase) -> None:
        p.record_transfer(from_purchase_id=uuid4(), payment_id="pay-1", amount_cents=1)

    purchase = given(reserved, transferred)
    with pytest.raises(NoCapturedPaymentError):
        purchase.request_refund(now=LATER)


def test_a_review_keeps_what_is_held_and_its_first_reason() -> None:
    purchase = given(reserved, requested, timed_out)
    purchase.require_review(reason="checks ran out", owner="on-call")
    purchase.require_review(reason="another", owner="x")
    assert (purchase.status, purchase.review_reason) == (
        Status.MANUAL_REVIEW,
        "checks ran out",
    )
    assert purchase.hold_active and purchase.payment_open  # noqa: PT018


def test_a_settled_purchase_is_not_sent_to_review() -> None:
    purchase = given(
        reserved, requested, captured, lambda p: p.grant_access(enrollment_id=uuid4())
    )
    with pytest.raises(NotRefundableError):
        purchase.require_review(reason="?", owner="x")


@pytest.mark.parametrize(
    "payment_id",
    ["pay 1", "paiement-é", "p" * 249, "pay\x00id", "", "pay_ok\n"],
)
def test_a_hostile_payment_id_still_gives_a_valid_stable_refund_key(
    payment_id: str,
) -> None:
    """A refund key the provider refuses failed every attempt before it left: the
    saga retried for ever and no review ever came."""
    key = refund_key_for(payment_id)
    assert check_key(key) == key
    assert refund_key_for(payment_id) == key  # stable: one refund per payment
    assert key != refund_key_for(payment_id + "x")


def test_a_plain_payment_id_names_its_refund_key() -> None:
    assert refund_key_for("pay_123") == "refund-pay_123"


def test_a_check_counts_once_per_deadline_however_many_processes_made_it() -> None:
    purchase = given(reserved, requested, timed_out)
    due = purchase.next_check_at
    first = NOW + timedelta(seconds=5)
    [check] = when(
        purchase,
        lambda p: p.schedule_check(
            reason="still unknown", next_check_at=first, due_at=due
        ),
    )
    assert isinstance(check, Purchase.PaymentCheckScheduled)
    # A second process decided on the same deadline and finished later: not counted.
    for late in (
        lambda p: p.schedule_check(reason="again", next_check_at=LATER, due_at=due),
        lambda p: p.record_found_pending(next_check_at=LATER, due_at=due),
    ):
        with pytest.raises(StepNotDueError):
            late(purchase)
    assert (purchase.checks, purchase.next_check_at) == (1, first)
    assert purchase.collect_events() == []


def refund_intended(p: Purchase) -> None:
    p.expire_hold(now=LATER)
    p.record_captured(payment_id="pay-1", amount_cents=2500)
    p.request_refund(now=LATER)


def test_a_refund_attempt_counts_once_per_deadline() -> None:
    purchase = given(reserved, requested, refund_intended)
    due = purchase.next_refund_at
    retry = LATER + timedelta(seconds=1)
    when(
        purchase,
        lambda p: p.schedule_refund_retry(
            reason="503", next_attempt_at=retry, due_at=due
        ),
    )
    with pytest.raises(StepNotDueError):
        purchase.schedule_refund_retry(reason="503", next_attempt_at=LATER, due_at=due)
    assert (purchase.refund_attempts, purchase.next_refund_at) == (1, retry)


def confirmed(p: Purchase) -> None:
    p.record_captured(payment_id="pay 1 ü", amount_cents=2500)
    p.grant_access(enrollment_id=ENROLLMENT)


ENROLLMENT = uuid4()


def test_a_cancelled_bought_seat_records_the_refund_under_the_payments_key() -> None:
    purchase = given(reserved, requested, confirmed)
    [intent] = when(
        purchase,
        lambda p: p.refund_cancelled_seat(enrollment_id=ENROLLMENT, now=LATER),
    )
    assert isinstance(intent, Purchase.RefundRequested)
    assert (intent.refund_key, intent.amount_cents) == (refund_key_for("pay 1 ü"), 2500)
    assert purchase.status is Status.REFUND_PENDING
    with pytest.raises(NotRefundableError):  # a second cancel refunds nothing more
        purchase.refund_cancelled_seat(enrollment_id=ENROLLMENT, now=LATER)


def test_only_the_enrollment_the_money_bought_refunds_it() -> None:
    purchase = given(reserved, requested, confirmed)
    with pytest.raises(NotRefundableError):
        purchase.refund_cancelled_seat(enrollment_id=uuid4(), now=LATER)
    assert given(reserved).status is Status.RESERVED
    with pytest.raises(NotRefundableError):
        given(reserved).refund_cancelled_seat(enrollment_id=ENROLLMENT, now=LATER)
