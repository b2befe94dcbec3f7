"""What Club accepts from the payment provider (application/provider_values.py)."""

from __future__ import annotations

import pytest

from application.payment import Webhook
from application.provider_values import (
    UnusableAnswerError,
    UnusableWebhookError,
    provider_amount,
    provider_id,
    provider_text,
    provider_time,
)
from tests.unit.test_payment_port import WEBHOOK


@pytest.mark.parametrize(
    "value", ["pay_1", "pay 1", "paiement-ü-東京", "p" * 255, "refund-\u00e9"]
)
def test_an_id_club_can_store_and_send_back_is_kept_as_sent(value: str) -> None:
    assert provider_id(value, "payment id") == value


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (None, "not a text"),
        (7, "not a text"),
        ("", "empty"),
        ("   ", "empty"),
        ("p" * 256, "256 characters"),
        ("pay\x00", "control character"),
        ("pay\nX-Forged: 1", "control character"),
        ("pay\ud800", "unpaired surrogate"),
    ],
)
def test_an_id_club_cannot_use_is_unusable_naming_why(
    value: object, named: str
) -> None:
    with pytest.raises(UnusableAnswerError, match=named):
        provider_id(value, "payment id")


@pytest.mark.parametrize("value", [0, -1, 10**11, True, 1.5, "100", None])
def test_an_amount_is_whole_cents_within_bounds(value: object) -> None:
    with pytest.raises(UnusableAnswerError, match="amount_cents"):
        provider_amount(value)


@pytest.mark.parametrize(
    "value", ["2026-12-02", "1999-12-31T23:59:59+00:00", "9999-01-01T00:00:00Z",
              "yesterday", 17, "2" * 100]
)  # fmt: skip
def test_a_time_has_a_zone_and_a_sane_year(value: object) -> None:
    with pytest.raises(UnusableAnswerError, match="occurred_at"):
        provider_time(value, "occurred_at")


def test_free_text_is_made_storable_and_short() -> None:
    assert provider_text("card\x00 declined\ud800", "x") == "card\ufffd declined\ufffd"
    assert provider_text("", "fallback") == "fallback"
    assert provider_text(None, "fallback") == "fallback"
    assert len(provider_text("y" * 10_000, "x")) == 201


def test_a_webhook_with_an_unusable_fact_still_names_its_event_and_key() -> None:
    body = WEBHOOK.to_json().replace(b'"pay_1"', b'"' + b"p" * 300 + b'"')
    with pytest.raises(UnusableWebhookError) as raised:
        Webhook.from_json(body)
    assert (raised.value.event_id, raised.value.idempotency_key) == (
        WEBHOOK.event_id,
        WEBHOOK.idempotency_key,
    )
    assert "payment id has 300 characters" in str(raised.value)
