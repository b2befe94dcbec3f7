"""The saga's in-memory provider keeps the port's promises, like the HTTP adapter."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.ports.payment_provider import PaymentProviderContract
from tests.unit.fake_payment import FakePaymentProvider


class TestFakePaymentProvider(PaymentProviderContract):
    @pytest.fixture
    def provider(self) -> FakePaymentProvider:
        return FakePaymentProvider()

    @pytest.fixture
    def unreachable(self) -> FakePaymentProvider:
        return FakePaymentProvider(unreachable=True)

    @pytest.fixture
    def declining(self) -> FakePaymentProvider:
        return FakePaymentProvider(decline_all=True)

    @pytest.fixture
    def captured(self, provider: FakePaymentProvider) -> Callable[[str], int]:
        return lambda key: int(key in provider.charges)
