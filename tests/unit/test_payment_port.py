"""The payment port's one decision table, its webhook value and its signatures."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from application.payment import (
    MAX_AMOUNT_CENTS,
    PaymentDeclinedError,
    PaymentOutcomeUnknownError,
    PermanentPaymentError,
    Stage,
    TransientPaymentError,
    Webhook,
    WebhookType,
    check_amount,
    classify_http_status,
    classify_transport,
    sign,
    verify_signature,
)

SECRET = "whsec_unit"  # noqa: S105 - a test secret
BODY = b'{"id":"evt_1","type":"payment.captured"}'
NOW = 1_800_000_000


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 599])
def test_a_5xx_408_or_429_is_transient_with_retry_after(status):
    error = classify_http_status(status, "busy", retry_after=3.0)
    assert type(error) is TransientPaymentError
    assert error.retry_after == 3.0


def test_a_409_key_in_flight_is_unknown():
    assert type(classify_http_status(409, "in flight")) is PaymentOutcomeUnknownError


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_any_other_4xx_is_permanent_not_a_decline(status):
    assert type(classify_http_status(status, "no")) is PermanentPaymentError


def test_a_402_is_a_decline_with_its_reason_and_payment():
    error = classify_http_status(
        402, "declined", decline_reason="insufficient_funds", payment_id="pay_1"
    )
    assert isinstance(error, PaymentDeclinedError)
    assert isinstance(error, PermanentPaymentError)
    assert (error.decline_reason, error.payment_id) == ("insufficient_funds", "pay_1")
    assert "insufficient_funds" in str(error)


def test_a_transport_failure_before_sending_is_transient_after_it_unknown():
    assert type(classify_transport(Stage.NOT_SENT, "refused")) is TransientPaymentError
    assert type(classify_transport(Stage.SENT, "reset")) is PaymentOutcomeUnknownError


@pytest.mark.parametrize(
    "amount", [0, -1, MAX_AMOUNT_CENTS + 1, 10**30, True, 1.5, "100", None]
)
def test_an_amount_out_of_bounds_or_not_whole_cents_is_refused(amount):
    with pytest.raises(ValueError, match="whole number of cents"):
        check_amount(amount)


def test_a_signature_verifies_only_the_exact_body_secret_and_time():
    header = sign(SECRET, BODY, NOW)
    assert header.startswith(f"t={NOW},v1=")
    assert verify_signature(SECRET, BODY, header, now=NOW)
    assert verify_signature(SECRET, BODY, header, now=NOW + 299)
    assert not verify_signature(SECRET, BODY + b" ", header, now=NOW)  # tampered
    assert not verify_signature("another", BODY, header, now=NOW)
    assert not verify_signature(SECRET, BODY, header, now=NOW + 301)  # replayed late
    assert not verify_signature(SECRET, BODY, header, now=NOW - 301)  # from the future


def test_a_signature_cannot_be_moved_to_another_timestamp():
    digest = sign(SECRET, BODY, NOW).split("v1=")[1]
    assert not verify_signature(SECRET, BODY, f"t={NOW + 60},v1={digest}", now=NOW)


def test_any_of_several_signatures_may_match_during_a_secret_rotation():
    good = sign(SECRET, BODY, NOW).split("v1=")[1]
    header = f"t={NOW},v1={'0' * 64},v1={good}"
    assert verify_signature(SECRET, BODY, header, now=NOW)


@pytest.mark.parametrize(
    "header",
    [None, "", "garbage", f"t={NOW}", "v1=abc", f"t=x,v1={'0' * 64}",
     f"t={'9' * 5000},v1=00", f"t={NOW},v1=\u00e9\ud800", f"t=-{NOW},v1=00"],
)  # fmt: skip
def test_a_malformed_signature_header_is_false_never_an_error(header):
    assert verify_signature(SECRET, BODY, header, now=NOW) is False


def test_an_empty_secret_verifies_nothing():
    assert not verify_signature("", BODY, sign("", BODY, NOW), now=NOW)


WEBHOOK = Webhook(
    event_id="evt_1", type=WebhookType.REFUND_SUCCEEDED, payment_id="pay_1",
    idempotency_key="purchase-1:charge", reference="purchase-1", amount_cents=1500,
    occurred_at=datetime(2026, 11, 30, 10, 0, tzinfo=UTC), refund_id="re_1",
)  # fmt: skip


def test_a_webhook_reads_back_what_it_wrote():
    assert Webhook.from_json(WEBHOOK.to_json()) == WEBHOOK


@pytest.mark.parametrize(
    "body",
    [b"", b"[]", b"{", b"null", b'{"id": "evt_1"}',
     WEBHOOK.to_json().replace(b"refund.succeeded", b"payment.stolen"),
     WEBHOOK.to_json().replace(b"+00:00", b""),  # a naive time
     WEBHOOK.to_json().replace(b"1500", b"-1"),
     WEBHOOK.to_json().replace(b"1500", b"1" * 5000),
     WEBHOOK.to_json().replace(b'"evt_1"', b'"evt\\u0000"'),
     WEBHOOK.to_json().replace(b"purchase-1:charge", b"has space"),
     b"[" * 100_000],
)  # fmt: skip
def test_a_bad_webhook_body_is_a_value_error_naming_it(body):
    with pytest.raises(ValueError):  # noqa: PT011 - every message differs
        Webhook.from_json(body)


def test_a_webhook_needs_an_aware_time():
    with pytest.raises(ValueError, match="time zone"):
        Webhook(
            event_id="e", type=WebhookType.PAYMENT_CAPTURED, payment_id="p",
            idempotency_key="k", reference="r", amount_cents=1,
            occurred_at=datetime(2026, 1, 1),  # noqa: DTZ001 - the point of the test
        )  # fmt: skip
