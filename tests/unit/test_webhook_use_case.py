"""The payment webhook's use case: a fact recorded once per event id, typed."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

from application.payment_webhook import Webhook, WebhookType
from application.webhook_receipt import Handled
from tests.unit.saga_world import World


class Records:
    """The webhook log in memory: each event id once, with the words kept first."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[UUID | None, str]] = {}
        self.racing: str | None = None  # words a racing redelivery keeps first

    def outcome_of(self, event_id: str) -> str | None:
        found = self.kept.get(event_id)
        return None if found is None else found[1]

    def accept(
        self, *, event_id: str, type_: str, purchase_id: UUID | None, outcome: str
    ) -> str:
        assert type_ in {t.value for t in WebhookType}
        if self.racing is not None:
            self.kept.setdefault(event_id, (purchase_id, self.racing))
        self.kept.setdefault(event_id, (purchase_id, outcome))
        return self.kept[event_id][1]


def webhook(key: str, *, payment_id: str = "pay_1") -> Webhook:
    return Webhook(
        event_id=f"evt_{uuid4().hex}",
        type=WebhookType.PAYMENT_CAPTURED,
        payment_id=payment_id,
        idempotency_key=key,
        reference="r",
        amount_cents=2500,
        occurred_at=datetime.now(UTC),
    )


def charged() -> tuple[World, UUID, str]:
    """Ann's purchase, its payment asked for (the webhook's key names it)."""
    w = World()
    purchase_id = w.reserve(w.lesson(), "ann")
    w.purchases.request_payment(purchase_id, next_check_at=w.now)
    return w, purchase_id, w.get(purchase_id).payment_key


def test_a_capture_is_recorded_and_kept_with_its_event_id() -> None:
    w, purchase_id, key = charged()
    records = Records()
    fact = webhook(key)
    got = w.app.receive_webhook(fact, records=records)
    assert got.handled is Handled.RECORDED
    assert got.outcome == "recorded; purchase captured"
    assert not got.duplicate
    assert records.kept[fact.event_id] == (purchase_id, got.outcome)
    assert w.get(purchase_id).payment_id == "pay_1"


def test_a_redelivery_is_answered_from_the_first_and_records_nothing() -> None:
    w, purchase_id, key = charged()
    records = Records()
    fact = webhook(key)
    w.app.receive_webhook(fact, records=records)
    version = w.get(purchase_id).version
    again = w.app.receive_webhook(fact, records=records)
    assert again.handled is Handled.DUPLICATE
    assert again.duplicate
    assert again.outcome == "recorded; purchase captured"
    assert w.get(purchase_id).version == version


def test_a_racing_redelivery_s_words_win() -> None:
    w, _, key = charged()
    records = Records()
    records.racing = "recorded; purchase captured (first)"
    got = w.app.receive_webhook(webhook(key), records=records)
    assert got.handled is Handled.DUPLICATE
    assert got.outcome == records.racing


def test_a_fact_the_purchase_refuses_is_kept_as_the_outcome() -> None:
    w, _, key = charged()
    records = Records()
    w.app.receive_webhook(webhook(key), records=records)
    forged = w.app.receive_webhook(
        webhook(key, payment_id="pay_forged"), records=records
    )
    assert forged.handled is Handled.REFUSED
    assert forged.refusal
    assert forged.outcome == f"refused: {forged.refusal}"


def test_a_key_naming_no_purchase_of_ours_wakes_nothing() -> None:
    w = World()
    records = Records()
    for key in ("someone-elses-key", f"purchase-{uuid4()}"):
        fact = webhook(key)
        got = w.app.receive_webhook(fact, records=records)
        assert got.handled is Handled.NO_SUCH_PURCHASE
        assert got.outcome == "no such purchase"
        assert records.kept[fact.event_id] == (None, "no such purchase")
