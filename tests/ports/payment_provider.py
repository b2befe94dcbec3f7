"""What every `PaymentProvider` must do; each adapter's test subclasses this.

Subclasses provide `provider` (reaching a live provider that captures at once),
`unreachable` (pointing at a port where nothing listens), `declining` (a provider
that declines every new charge) and `captured` (how many charges the provider holds
under a key, read from its own records, not through the port).
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import uuid4

import pytest

from application.payment import (
    PaymentDeclinedError,
    PaymentStatus,
    PermanentPaymentError,
    RefundStatus,
    TransientPaymentError,
)
from application.ports import PaymentProvider


class PaymentProviderContract:
    """Not collected itself (no `Test` prefix)."""

    def test_a_charge_is_held_once_and_a_repeat_is_the_first(
        self, provider: PaymentProvider, captured: Callable[[str], int]
    ) -> None:
        key = str(uuid4())
        first = provider.charge("purchase-1", 1500, key)
        again = provider.charge("purchase-1", 1500, key)
        assert first.payment_id
        assert again.payment_id == first.payment_id
        assert (first.replayed, again.replayed) == (False, True)
        assert first.status in {PaymentStatus.PENDING, PaymentStatus.CAPTURED}
        assert captured(key) == 1

    def test_a_charged_key_is_never_reported_not_found(
        self, provider: PaymentProvider
    ) -> None:
        # NOT_FOUND tells the saga a new charge is safe: it must never be a lie.
        key = str(uuid4())
        provider.charge("purchase-2", 900, key)
        assert provider.status(key) in {PaymentStatus.PENDING, PaymentStatus.CAPTURED}

    def test_an_unknown_key_is_not_found(self, provider: PaymentProvider) -> None:
        assert provider.status(str(uuid4())) is PaymentStatus.NOT_FOUND
        assert provider.refund_status(str(uuid4())) is RefundStatus.NOT_FOUND

    def test_an_unreachable_provider_is_transient(
        self, unreachable: PaymentProvider
    ) -> None:
        with pytest.raises(TransientPaymentError, match="not reached"):
            unreachable.charge("purchase-3", 100, str(uuid4()))
        with pytest.raises(TransientPaymentError):
            unreachable.status(str(uuid4()))

    def test_a_decline_is_permanent_with_a_reason_and_looks_up_declined(
        self, declining: PaymentProvider
    ) -> None:
        key = str(uuid4())
        with pytest.raises(PaymentDeclinedError) as raised:
            declining.charge("purchase-4", 100, key)
        assert raised.value.decline_reason
        assert declining.status(key) is PaymentStatus.DECLINED

    def test_a_captured_payment_is_refunded_once_under_its_key(
        self, provider: PaymentProvider
    ) -> None:
        payment = provider.charge("purchase-5", 1500, str(uuid4()))
        key = str(uuid4())
        first = provider.refund(payment.payment_id, 1500, key)
        again = provider.refund(payment.payment_id, 1500, key)
        assert again.refund_id == first.refund_id
        assert again.replayed
        assert first.status in {RefundStatus.PENDING, RefundStatus.SUCCEEDED}
        assert provider.refund_status(key) in {
            RefundStatus.PENDING,
            RefundStatus.SUCCEEDED,
        }

    def test_refunding_more_than_was_paid_is_permanent(
        self, provider: PaymentProvider
    ) -> None:
        payment = provider.charge("purchase-6", 1000, str(uuid4()))
        provider.refund(payment.payment_id, 600, str(uuid4()))
        with pytest.raises(PermanentPaymentError):
            provider.refund(payment.payment_id, 600, str(uuid4()))

    def test_refunding_an_unknown_payment_is_permanent(
        self, provider: PaymentProvider
    ) -> None:
        with pytest.raises(PermanentPaymentError):
            provider.refund("pay_does_not_exist", 100, str(uuid4()))
