"""The HTTP payment client against the sandbox process: the port's contract, and
each failure landing in its class."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from uuid import uuid4

import pytest

from adapters.embedded.process import free_port
from adapters.providers.payment_http import HttpPaymentProvider
from application.payment import (
    PaymentOutcomeUnknownError,
    PaymentStatus,
    PermanentPaymentError,
    RefundStatus,
    TransientPaymentError,
)
from tests.integration.half_answer import client_of
from tests.integration.payment_sandbox_process import PaymentSandboxProcess
from tests.ports.payment_provider import PaymentProviderContract
from tests.stack import eventually, scratch_for


@pytest.fixture(scope="module")
def sandbox(request) -> Iterator[PaymentSandboxProcess]:
    data = scratch_for(request, "sandbox") / "data"
    with PaymentSandboxProcess(data).running() as process:
        yield process


@pytest.fixture
def knobs(sandbox):
    # Captured at once, unless a test says not.
    with sandbox.fresh_knobs(settle_delay_ms=0) as set_knobs:
        yield set_knobs


class TestHttpPaymentProvider(PaymentProviderContract):
    @pytest.fixture
    def provider(self, sandbox, knobs):
        with closing(HttpPaymentProvider(sandbox.url, read_timeout_s=5)) as client:
            yield client

    @pytest.fixture
    def unreachable(self):
        with closing(HttpPaymentProvider(f"http://127.0.0.1:{free_port()}")) as client:
            yield client

    @pytest.fixture
    def declining(self, provider, knobs):
        knobs(decline_rate=1.0)
        return provider

    @pytest.fixture
    def captured(self, sandbox):
        return sandbox.held

    def test_with_no_knob_a_charge_is_pending_then_captured(self, provider, knobs):
        knobs(settle_delay_ms=200)
        key = str(uuid4())
        assert provider.charge("p", 100, key).status is PaymentStatus.PENDING
        assert provider.status(key) is PaymentStatus.PENDING
        eventually(lambda: provider.status(key) is PaymentStatus.CAPTURED, timeout=5)

    def test_a_pending_payment_cannot_be_refunded_yet(self, provider, knobs):
        knobs(settle_delay_ms=60_000)
        payment = provider.charge("p", 100, str(uuid4()))
        with pytest.raises(PermanentPaymentError, match="this one is pending"):
            provider.refund(payment.payment_id, 100, str(uuid4()))

    @pytest.mark.parametrize("status", [500, 502, 503])
    def test_a_5xx_is_transient(self, provider, knobs, status):
        knobs(fail_rate=1.0, fail_status=status)
        with pytest.raises(TransientPaymentError, match=str(status)):
            provider.charge("p", 100, str(uuid4()))

    @pytest.mark.parametrize("status", [400, 403, 422])
    def test_a_4xx_is_permanent(self, provider, knobs, status):
        knobs(fail_rate=1.0, fail_status=status)
        with pytest.raises(PermanentPaymentError, match=str(status)):
            provider.charge("p", 100, str(uuid4()))

    def test_a_429_is_transient_with_the_providers_retry_after(self, provider, knobs):
        knobs(rate_limit_per_s=1)
        time.sleep(1.05)  # earlier tests' charges leave the window
        provider.charge("p", 100, str(uuid4()))
        with pytest.raises(TransientPaymentError, match="429") as raised:
            provider.charge("p", 100, str(uuid4()))
        assert raised.value.retry_after == 1.0
        time.sleep(1.05)  # leave the window for the next test

    def test_a_dropped_charge_is_unknown_and_the_lookup_says_captured(
        self, provider, knobs
    ):
        knobs(drop_rate=1.0)  # captured, but the response is lost
        key = str(uuid4())
        with pytest.raises(PaymentOutcomeUnknownError, match="RemoteProtocolError"):
            provider.charge("p", 100, key)
        assert provider.status(key) is PaymentStatus.CAPTURED

    def test_a_read_timeout_after_sending_is_unknown(self, sandbox, knobs):
        knobs(latency_ms=1500)
        key = str(uuid4())
        impatient = HttpPaymentProvider(sandbox.url, read_timeout_s=0.3)
        try:
            with pytest.raises(PaymentOutcomeUnknownError, match="ReadTimeout"):
                impatient.charge("p", 100, key)
            # A lookup that times out proves nothing: transient, not unknown.
            with pytest.raises(TransientPaymentError, match="ReadTimeout"):
                impatient.status(key)
        finally:
            impatient.close()
        # The provider went on without us: exactly why a blind new charge is wrong.
        eventually(lambda: sandbox.held(key) == 1, timeout=10)

    def test_a_provider_that_is_down_is_transient_for_every_call(self, provider, knobs):
        knobs(down=True)
        with pytest.raises(TransientPaymentError, match="503"):
            provider.charge("p", 100, str(uuid4()))
        with pytest.raises(TransientPaymentError, match="503"):
            provider.status(str(uuid4()))
        with pytest.raises(TransientPaymentError, match="503"):
            provider.refund("pay_x", 100, str(uuid4()))

    def test_refunds_down_is_transient_for_refunds_only(self, provider, knobs):
        payment = provider.charge("p", 100, str(uuid4()))
        knobs(refunds_down=True)
        key = str(uuid4())
        with pytest.raises(TransientPaymentError, match="503"):
            provider.refund(payment.payment_id, 100, key)
        with pytest.raises(TransientPaymentError, match="503"):
            provider.refund_status(key)
        assert provider.charge("p", 100, str(uuid4())).payment_id  # charges work
        knobs(refunds_down=False)
        assert provider.refund_status(key) is RefundStatus.NOT_FOUND  # none was made
        refund = provider.refund(payment.payment_id, 100, key)
        assert refund.status is RefundStatus.SUCCEEDED

    @pytest.mark.parametrize("amount", [0, -5, 10**30, True])
    def test_a_bad_amount_is_refused_before_anything_is_sent(self, unreachable, amount):
        with pytest.raises(ValueError, match="whole number of cents"):
            unreachable.charge("p", amount, str(uuid4()))

    @pytest.mark.parametrize("key", ["", "k" * 256, "has space", "nul\x00"])
    def test_a_bad_key_is_refused_before_anything_is_sent(self, unreachable, key):
        with pytest.raises(ValueError, match="idempotency key"):
            unreachable.charge("p", 100, key)

    def test_a_bad_url_is_refused_naming_the_setting(self):
        with pytest.raises(ValueError, match="CLUB_PAYMENT_PROVIDER_URL"):
            HttpPaymentProvider("ftp://pay.example.org")


@pytest.mark.parametrize(
    "reply",
    [
        b'HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{"id":',  # cut body
        b"HTTP/1.1 201 Cre",  # cut status line
        b"",  # no answer at all
        b"HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhello",  # not JSON
        b'HTTP/1.1 201 Created\r\nContent-Length: 19\r\n\r\n{"status":"weird"}\n',
    ],
)
def test_a_charge_answer_cut_or_unreadable_is_unknown(reply):
    with client_of(reply, HttpPaymentProvider) as (client, server):
        with pytest.raises(PaymentOutcomeUnknownError):
            client.charge("p", 100, str(uuid4()))
        assert server.requests == 1  # it did leave: that is why it is unknown
