"""Every value a payment provider answers is checked at the adapter's edge: one
the saga cannot act on is an `UnusableAnswerError` naming it (the saga sends the
purchase to a person), never a value stored as it came or an error retried for
ever. Each answer comes from a real socket (tests/integration/half_answer.py)."""

from __future__ import annotations

import json
from uuid import uuid4

import pytest

from adapters.providers.payment_http import HttpPaymentProvider
from application.payment import PaymentDeclinedError, PaymentStatus
from application.provider_values import UnusableAnswerError
from tests.integration.half_answer import client_of

KEY = "purchase-1"


def reply(status: int, body: dict[str, object]) -> bytes:
    raw = json.dumps(body).encode()
    return (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(raw)}\r\n\r\n"
    ).encode() + raw


def charged(**fields: object) -> bytes:
    body: dict[str, object] = {
        "id": "pay_1", "status": "captured", "amount_cents": 100,
        "idempotency_key": KEY,
    }  # fmt: skip
    return reply(201, body | fields)


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        (charged(id="p" * 300), "payment id has 300 characters"),
        (charged(id="pay\u0000"), "control character"),
        (charged(id="pay\ud800"), "unpaired surrogate"),
        (charged(id=42), "payment id is not a text"),
        (charged(amount_cents="100"), "not a whole number of cents"),
        (charged(amount_cents=True), "not a whole number of cents"),
        (charged(amount_cents=-1), "outside"),
        (charged(amount_cents=10**30), "outside"),
        (charged(idempotency_key="purchase-2"), "not 'purchase-1'"),
    ],
)
def test_a_charge_answered_with_a_value_club_cannot_act_on_is_unusable(
    answer: bytes, named: str
) -> None:
    with (
        client_of(answer, HttpPaymentProvider) as (client, _),
        pytest.raises(UnusableAnswerError, match=named),
    ):
        client.charge("p", 100, KEY)


def test_an_id_with_spaces_and_letters_from_anywhere_is_kept_as_sent() -> None:
    hostile = "pay ü " + "é" * 200
    with client_of(charged(id=hostile, amount_cents=90), HttpPaymentProvider) as (
        client,
        _,
    ):
        payment = client.charge("p", 100, KEY)
    assert (payment.payment_id, payment.status) == (hostile, PaymentStatus.CAPTURED)
    assert payment.amount_cents == 90  # what it took: the saga compares the price


def test_a_refund_answered_for_another_payment_is_unusable() -> None:
    body = {"id": "re_1", "status": "succeeded", "payment_id": "pay_2",
            "amount_cents": 100, "idempotency_key": "refund-pay_1"}  # fmt: skip
    with (
        client_of(reply(201, body), HttpPaymentProvider) as (client, _),
        pytest.raises(UnusableAnswerError, match="payment_id 'pay_2'"),
    ):
        client.refund("pay_1", 100, "refund-pay_1")


def test_a_declines_free_text_is_made_storable_not_refused() -> None:
    body = {"detail": "no\u0000", "decline_reason": "x\ud800" + "y" * 500,
            "payment_id": "p" * 999}  # fmt: skip
    with (
        client_of(reply(402, body), HttpPaymentProvider) as (client, _),
        pytest.raises(PaymentDeclinedError) as raised,
    ):
        client.charge("p", 100, str(uuid4()))
    reason = raised.value.decline_reason
    assert reason.startswith("x\ufffdyyy")
    assert len(reason) <= 201
    reason.encode()  # storable: no unpaired surrogate left
    assert raised.value.payment_id is None  # unusable, and only informative here
