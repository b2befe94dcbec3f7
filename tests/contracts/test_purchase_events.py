"""The purchase saga's published events: subjects, ids only, what stays internal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import get_type_hints
from uuid import uuid4

import attrs
import pytest

from application.contracts.envelope import Envelope, MalformedEnvelopeError
from application.contracts.mapping import PUBLISHED, decode, to_envelope
from application.contracts.purchase_events import PURCHASE_VERSIONS
from application.ids import event_id
from domain.purchase import Purchase
from tests.contracts.test_published_events import EXAMPLES, load

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOLD = timedelta(minutes=15)


def reserved() -> Purchase:
    return Purchase.reserve(
        purchase_id=uuid4(), lesson_id=uuid4(), student_id="ann",
        request_id="k-1", price_cents=2500, now=NOW, hold=HOLD,
    )  # fmt: skip


def published(purchase: Purchase) -> list[Envelope]:
    return [e for event in purchase.collect_events() if (e := to_envelope(event))]


def test_the_paid_path_publishes_reserved_captured_confirmed_under_purchase() -> None:
    purchase = reserved()
    purchase.request_payment(next_check_at=NOW + timedelta(seconds=30))
    purchase.record_captured(payment_id="pay_1", amount_cents=2500)
    enrollment_id = uuid4()
    purchase.grant_access(enrollment_id=enrollment_id)
    envelopes = published(purchase)  # PaymentRequested stays internal
    assert [e.subject for e in envelopes] == [
        "club.events.purchase.PurchaseReserved",
        "club.events.purchase.PaymentCaptured",
        "club.events.purchase.PurchaseConfirmed",
    ]
    assert [e.aggregate_version for e in envelopes] == [1, 3, 4]
    assert [e.event_id for e in envelopes] == [
        event_id(purchase.id, v) for v in (1, 3, 4)
    ]
    reserved_data, captured_data, confirmed_data = (e.data for e in envelopes)
    assert reserved_data == {
        "purchase_id": str(purchase.id),
        "lesson_id": str(purchase.lesson_id),
        "student_id": "ann",
        "price_cents": 2500,
        "hold_expires_at": "2026-11-30T09:15:00Z",
    }
    assert captured_data == {
        "purchase_id": str(purchase.id),
        "payment_id": "pay_1",
        "amount_cents": 2500,
    }
    assert confirmed_data == {
        "purchase_id": str(purchase.id),
        "enrollment_id": str(enrollment_id),
    }


def test_the_late_payment_path_publishes_expiry_offer_refund_and_review() -> None:
    purchase = reserved()
    purchase.request_payment(next_check_at=NOW + timedelta(seconds=30))
    purchase.expire_hold(now=NOW + HOLD)
    purchase.record_captured(payment_id="pay_1", amount_cents=2500)
    purchase.offer_alternative(offer_expires_at=NOW + timedelta(days=1))
    purchase.request_refund(now=NOW + timedelta(days=1))
    purchase.record_refund_accepted(refund_id="re_1", next_check_at=NOW)
    purchase.schedule_refund_retry(
        reason="down", next_attempt_at=NOW, due_at=purchase.next_refund_at
    )
    purchase.record_refunded(refund_id="re_1")
    types = [(e.type, e.data) for e in published(purchase)][1:]
    pid = str(purchase.id)
    assert types == [
        ("HoldExpired", {"purchase_id": pid}),
        ("PaymentCaptured", {"purchase_id": pid, "payment_id": "pay_1",
                             "amount_cents": 2500}),
        ("AlternativeOffered", {"purchase_id": pid,
                                "offer_expires_at": "2026-12-01T09:00:00Z"}),
        ("RefundRequested", {"purchase_id": pid, "amount_cents": 2500}),
        ("Refunded", {"purchase_id": pid, "refund_id": "re_1"}),
    ]  # fmt: skip
    review = reserved()
    review.request_payment(next_check_at=NOW)
    review.record_outcome_unknown(reason="timeout", next_check_at=NOW, owner="o")
    review.schedule_check(
        reason="still unknown", next_check_at=NOW, due_at=review.next_check_at
    )
    review.require_review(reason="free text: stays internal", owner="o")
    [_, manual] = published(review)
    assert (manual.type, manual.data) == (
        "ManualReviewRequired",
        {"purchase_id": str(review.id)},
    )


def test_every_purchase_envelope_round_trips_and_names_no_person() -> None:
    purchase = reserved()
    purchase.request_payment(next_check_at=NOW)
    purchase.record_captured(payment_id="pay_1", amount_cents=2500)
    purchase.grant_access(enrollment_id=uuid4())
    for envelope in published(purchase):
        again = Envelope.from_json(envelope.subject, envelope.to_json())
        assert again == envelope
        assert decode(again).to_data() == envelope.data
        # ids, amounts and deadlines only: never an address or a name
        assert all(key.endswith(("_id", "_cents", "_at")) for key in envelope.data)


def test_which_purchase_facts_are_published_is_pinned() -> None:
    """A fact added to (or dropped from) the published language is a decision."""
    purchase_rows = {
        cls.__qualname__: get_type(encode)
        for cls, (aggregate, encode) in PUBLISHED.items()
        if aggregate == "purchase"
    }
    assert purchase_rows == {
        "Purchase.Reserved": "PurchaseReserved",
        "Purchase.PaymentCaptured": "PaymentCaptured",
        "Purchase.AccessGranted": "PurchaseConfirmed",
        "Purchase.HoldExpired": "HoldExpired",
        "Purchase.RefundRequested": "RefundRequested",
        "Purchase.Refunded": "Refunded",
        "Purchase.ManualReviewRequired": "ManualReviewRequired",
        "Purchase.AlternativeOffered": "AlternativeOffered",
        "Purchase.ReviewResolved": "ReviewResolved",
    }


def get_type(encode: object) -> str:
    return str(get_type_hints(encode)["return"].TYPE)


@pytest.mark.parametrize("cls", PURCHASE_VERSIONS, ids=lambda c: c.TYPE)
@pytest.mark.parametrize("bad", [42, "not-a-uuid", None])
def test_a_purchase_event_naming_no_purchase_is_malformed_not_a_crash(
    cls: type, bad: object
) -> None:
    """A consumer dead-letters it (`unreadable:`/`malformed:`) and goes on."""
    example = load(EXAMPLES / cls.TYPE / "v1.json")
    forged = attrs.evolve(example, data=example.data | {"purchase_id": bad})
    with pytest.raises(
        MalformedEnvelopeError, match=f"^{cls.TYPE} v1 data is malformed"
    ):
        decode(forged)
