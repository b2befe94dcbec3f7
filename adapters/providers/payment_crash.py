"""The payment port with the saga's crash points: die right after the provider
answered, before the saga records the answer (the gap the keys must cover)."""

from __future__ import annotations

from adapters.crash import crash_point
from application.payment import Payment, PaymentStatus, Refund, RefundStatus
from application.ports import PaymentProvider


class CrashPointProvider:
    """Delegates every call; `CLUB_CRASH_AT` may SIGKILL the process after one."""

    def __init__(self, provider: PaymentProvider) -> None:
        self._provider = provider

    def charge(
        self, reference: str, amount_cents: int, idempotency_key: str
    ) -> Payment:
        payment = self._provider.charge(reference, amount_cents, idempotency_key)
        crash_point("saga.after_charge")
        return payment

    def status(self, idempotency_key: str) -> PaymentStatus:
        return self._provider.status(idempotency_key)

    def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> Refund:
        refund = self._provider.refund(payment_id, amount_cents, idempotency_key)
        crash_point("saga.after_refund_accepted")
        return refund

    def refund_status(self, idempotency_key: str) -> RefundStatus:
        return self._provider.refund_status(idempotency_key)
