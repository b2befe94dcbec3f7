"""An in-memory payment provider with fault knobs, for the saga's unit tests.

It keeps the port's promises (tests/ports/payment_provider.py): a key names one
charge or refund, a repeat replays it, a charged key is never NOT_FOUND. The
knobs make it misbehave the way the sandbox can: decline, time out before or
after accepting, fail transiently, leave a payment pending until the "student"
pays (the webhook), and refuse refunds while down.
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter

import attrs

from application.payment import (
    Payment,
    PaymentDeclinedError,
    PaymentOutcomeUnknownError,
    PaymentStatus,
    PermanentPaymentError,
    Refund,
    RefundStatus,
    TransientPaymentError,
)
from application.provider_values import provider_id


class Fault(enum.Enum):
    NONE = "none"
    TRANSIENT = "transient"  # refused before accepting anything
    LOST_BEFORE = "lost-before"  # timed out; the provider never saw it
    LOST_AFTER = "lost-after"  # accepted, then the response was lost


@attrs.define
class Charge:
    payment_id: str
    reference: str
    amount_cents: int
    status: PaymentStatus


@attrs.define
class Refunding:
    refund_id: str
    payment_id: str
    amount_cents: int
    status: RefundStatus


@attrs.define
class FakePaymentProvider:
    charges: dict[str, Charge] = attrs.field(factory=dict)
    refunds: dict[str, Refunding] = attrs.field(factory=dict)
    # knobs
    next_charge_fault: Fault = Fault.NONE  # applies to the next charge only
    decline_next: bool = False
    decline_all: bool = False
    capture_at_once: bool = True  # False: PENDING until `pay` (the student pays)
    status_down: bool = False
    unreachable: bool = False  # every call fails before anything is sent
    refunds_down: bool = False
    refund_fault: Fault = Fault.NONE  # applies to the next refund only
    # Accepted, then answered with a value Club cannot act on (an id of 300
    # characters): the next charge's or refund's answer says so.
    unusable_answer: bool = False
    refund_calls: Counter[str] = attrs.field(factory=Counter)  # per payment id
    _ids: itertools.count[int] = attrs.field(factory=itertools.count)

    def charge(
        self, reference: str, amount_cents: int, idempotency_key: str
    ) -> Payment:
        self._reach()
        if idempotency_key in self.charges:
            return self._replay(self.charges[idempotency_key])
        fault, self.next_charge_fault = self.next_charge_fault, Fault.NONE
        if fault is Fault.TRANSIENT:
            raise TransientPaymentError("provider answered 503")
        if fault is Fault.LOST_BEFORE:
            raise PaymentOutcomeUnknownError("timed out (never arrived)")
        status = (
            PaymentStatus.CAPTURED if self.capture_at_once else PaymentStatus.PENDING
        )
        if self.decline_next or self.decline_all:
            self.decline_next = False
            status = PaymentStatus.DECLINED
        charge = Charge(f"pay-{next(self._ids)}", reference, amount_cents, status)
        self.charges[idempotency_key] = charge
        self._maybe_unusable()
        if fault is Fault.LOST_AFTER:
            raise PaymentOutcomeUnknownError("timed out after the provider accepted")
        return self._replay(charge, replayed=False)

    def status(self, idempotency_key: str) -> PaymentStatus:
        self._reach()
        if self.status_down:
            raise TransientPaymentError("status lookup: provider answered 503")
        charge = self.charges.get(idempotency_key)
        return PaymentStatus.NOT_FOUND if charge is None else charge.status

    def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> Refund:
        self._reach()
        if self.refunds_down:
            raise TransientPaymentError("refunds: provider answered 503")
        self.refund_calls[payment_id] += 1
        replayed = idempotency_key in self.refunds
        if not replayed:
            self._check_refundable(payment_id, amount_cents)
            fault, self.refund_fault = self.refund_fault, Fault.NONE
            if fault is Fault.LOST_BEFORE:
                raise PaymentOutcomeUnknownError("refund timed out (never arrived)")
            self.refunds[idempotency_key] = Refunding(
                f"ref-{next(self._ids)}",
                payment_id,
                amount_cents,
                RefundStatus.SUCCEEDED,
            )
            self._maybe_unusable()
            if fault is Fault.LOST_AFTER:
                raise PaymentOutcomeUnknownError("refund timed out after accepting")
        r = self.refunds[idempotency_key]
        return Refund(
            refund_id=r.refund_id,
            payment_id=r.payment_id,
            status=r.status,
            amount_cents=r.amount_cents,
            replayed=replayed,
        )

    def refund_status(self, idempotency_key: str) -> RefundStatus:
        self._reach()
        if self.status_down:
            raise TransientPaymentError("refund lookup: provider answered 503")
        refund = self.refunds.get(idempotency_key)
        return RefundStatus.NOT_FOUND if refund is None else refund.status

    # -- what the "student" and the test see ----------------------------------

    def pay(self, idempotency_key: str) -> Charge | None:
        """The student completes a pending payment; returns the webhook's facts."""
        charge = self.charges.get(idempotency_key)
        if charge is None or charge.status is not PaymentStatus.PENDING:
            return None
        charge.status = PaymentStatus.CAPTURED
        return charge

    def captured_cents(self) -> int:
        return sum(
            c.amount_cents
            for c in self.charges.values()
            if c.status is PaymentStatus.CAPTURED
        )

    def refunded_cents(self) -> int:
        return sum(
            r.amount_cents
            for r in self.refunds.values()
            if r.status is RefundStatus.SUCCEEDED
        )

    def refunds_per_payment(self) -> Counter[str]:
        return Counter(r.payment_id for r in self.refunds.values())

    def _maybe_unusable(self) -> None:
        if self.unusable_answer:
            self.unusable_answer = False
            provider_id("p" * 300, "payment id")  # raises, as the adapter would

    def _reach(self) -> None:
        if self.unreachable:
            raise TransientPaymentError("provider not reached: connection refused")

    def _check_refundable(self, payment_id: str, amount_cents: int) -> None:
        paid = [c for c in self.charges.values() if c.payment_id == payment_id]
        if not paid or paid[0].status is not PaymentStatus.CAPTURED:
            raise PermanentPaymentError(f"provider answered 404: no {payment_id}")
        refunded = sum(
            r.amount_cents for r in self.refunds.values() if r.payment_id == payment_id
        )
        if refunded + amount_cents > paid[0].amount_cents:
            raise PermanentPaymentError("provider answered 400: more than was paid")

    def _replay(self, charge: Charge, *, replayed: bool = True) -> Payment:
        if charge.status is PaymentStatus.DECLINED:
            raise PaymentDeclinedError("card declined", charge.payment_id)
        return Payment(
            payment_id=charge.payment_id,
            status=charge.status,
            amount_cents=charge.amount_cents,
            replayed=replayed,
        )
