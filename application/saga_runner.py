"""The purchase saga's hands: does what `saga.decide` names, records each outcome.

Every call to the provider is preceded by a recorded intent (PaymentRequested,
RefundRequested) and carries a key derived from the purchase or the payment, so a
saga process killed anywhere leaves a state that the next one — or the same one
after a restart — reads and continues: a repeated call names the same charge or
refund, and the provider answers it once. Each outcome is recorded before the next
decision, and each failure class has its own next step:

- declined / refused for good: recorded; the seat is released;
- transient (nothing accepted): charge again later, with backoff and jitter;
- outcome unknown: `payment_checking`; status lookups, then a person;
- answered with a value Club cannot act on (an id it cannot store, another key,
  a malformed amount): a person, with the reason; money may have moved.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from uuid import UUID

from application.payment import (
    Payment,
    PaymentOutcomeUnknownError,
    PaymentStatus,
    PermanentPaymentError,
    RefundStatus,
    TransientPaymentError,
)
from application.ports import PaymentProvider
from application.provider_values import UnusableAnswerError
from application.purchases import PurchaseUseCases
from application.saga import (
    CHECK_OWNER,
    CallRefund,
    CheckPayment,
    CheckRefund,
    Command,
    ExpireHold,
    GrantAccess,
    OfferAlternative,
    RequestPayment,
    RequestRefund,
    SagaPolicy,
    decide,
)
from domain.errors import PurchaseStateError
from domain.purchase import Purchase

MAX_STEPS = 20  # a purchase passes through far fewer states than this


class PurchaseSaga:
    def __init__(
        self,
        *,
        purchases: PurchaseUseCases,
        provider: PaymentProvider,
        policy: SagaPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._purchases = purchases
        self._provider = provider
        self._policy = policy or SagaPolicy()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not secrecy

    def advance(self, purchase_id: UUID, now: datetime) -> datetime | None:
        """Do every step due at `now`; returns when to wake this purchase next."""
        for _ in range(MAX_STEPS):
            purchase = self._purchases.get_purchase(purchase_id)
            decision = decide(purchase, now, self._policy)
            if decision.command is None:
                return decision.next_deadline
            try:
                self._do(decision.command, purchase, now)
            except PurchaseStateError:
                # Another saga process (or a webhook) moved the purchase between our
                # read and our step: the step re-read it and refused. Decide again.
                continue
        msg = f"purchase {purchase_id} did not settle in {MAX_STEPS} steps"
        raise RuntimeError(msg)

    def _do(self, command: Command, p: Purchase, now: datetime) -> None:  # noqa: PLR0911
        pid = p.id
        if isinstance(command, RequestPayment):
            return self._charge(p, now)
        if isinstance(command, CheckPayment):
            return self._check(p, now)
        if isinstance(command, ExpireHold):
            self._purchases.expire_hold(pid, now=now)
            return None
        if isinstance(command, GrantAccess):
            self._purchases.grant_access(pid)
            return None
        if isinstance(command, OfferAlternative):
            self._purchases.offer_alternative(pid, offer_expires_at=command.until)
            return None
        if isinstance(command, RequestRefund):
            self._purchases.request_refund(pid, now=now)
            return None
        if isinstance(command, CallRefund):
            return self._refund(p, now)
        if isinstance(command, CheckRefund):
            return self._check_refund(p, now)
        self._purchases.require_review(pid, reason=command.reason, owner=CHECK_OWNER)
        return None

    def _charge(self, p: Purchase, now: datetime) -> None:
        policy = self._policy
        self._purchases.request_payment(p.id, next_check_at=now + policy.webhook_grace)
        try:
            payment = self._provider.charge(str(p.id), p.price_cents, p.payment_key)
        except PermanentPaymentError as error:  # a decline among them
            self._purchases.record_payment_declined(p.id, reason=str(error))
        except TransientPaymentError as error:
            delay = policy.backoff(
                p.charge_attempts, policy.first_retry, policy.max_retry_delay, self._rng
            )
            self._purchases.record_payment_not_taken(
                p.id, reason=str(error), retry_at=now + delay
            )
        except UnusableAnswerError as error:  # money may have moved: a person looks
            self._review(p, f"charge answered, unusable: {error}")
        except PaymentOutcomeUnknownError as error:
            self._purchases.record_payment_unknown(
                p.id,
                reason=str(error),
                next_check_at=now + self._check_delay(0),
                owner=CHECK_OWNER,
            )
        else:
            self._record_payment(p.id, payment)

    def _check(self, p: Purchase, now: datetime) -> None:
        try:
            status = self._lookup(p)
        except (TransientPaymentError, PaymentOutcomeUnknownError) as error:
            # The lookup itself failed: the outcome is as unknown as before.
            self._purchases.schedule_check(
                p.id,
                reason=f"status lookup failed: {error}",
                next_check_at=now + self._check_delay(p.checks + 1),
                due_at=p.next_check_at,
            )
            return
        except PermanentPaymentError as error:  # the replayed charge: declined
            self._purchases.record_payment_declined(p.id, reason=str(error))
            return
        except UnusableAnswerError as error:
            self._review(p, f"payment lookup answered, unusable: {error}")
            return
        reason = f"provider says {status.value}"
        if status is PaymentStatus.DECLINED:
            self._purchases.record_payment_declined(p.id, reason=reason)
        elif status is PaymentStatus.NOT_FOUND:
            self._purchases.record_payment_not_taken(p.id, reason=reason, retry_at=now)
        elif status is PaymentStatus.PENDING:
            self._purchases.record_payment_found_pending(
                p.id,
                next_check_at=now + self._check_delay(p.checks + 1),
                due_at=p.next_check_at,
            )

    def _lookup(self, p: Purchase) -> PaymentStatus:
        """The provider's answer for our key; a capture is recorded on the way."""
        status = self._provider.status(p.payment_key)
        if status is PaymentStatus.CAPTURED:
            # The lookup names no payment: the same charge again replays it (same
            # key), with its id and amount.
            payment = self._provider.charge(str(p.id), p.price_cents, p.payment_key)
            self._record_payment(p.id, payment)
            return payment.status
        return status

    def _record_payment(self, pid: UUID, payment: Payment) -> None:
        if payment.status is PaymentStatus.CAPTURED:
            self._purchases.record_payment_captured(
                pid, payment_id=payment.payment_id, amount_cents=payment.amount_cents
            )
        # PENDING: the webhook (or the check at `next_check_at`) settles it.

    def _refund(self, p: Purchase, now: datetime) -> None:
        assert p.payment_id is not None  # noqa: S101 - a refund intent needs both
        assert p.refund_key is not None  # noqa: S101
        try:
            refund = self._provider.refund(p.payment_id, p.refund_cents, p.refund_key)
        except PermanentPaymentError as error:
            self._review(p, f"refund refused: {error}")
            return
        except UnusableAnswerError as error:
            self._review(p, f"refund answered, unusable: {error}")
            return
        except (TransientPaymentError, PaymentOutcomeUnknownError) as error:
            # Unknown is safe to repeat: the same key names the same refund.
            self._retry_refund(p, now, str(error))
            return
        if refund.status is RefundStatus.SUCCEEDED:
            self._purchases.record_refunded(p.id, refund_id=refund.refund_id)
        else:
            delay = self._check_delay(p.refund_attempts)
            self._purchases.record_refund_accepted(
                p.id, refund_id=refund.refund_id, next_check_at=now + delay
            )

    def _check_refund(self, p: Purchase, now: datetime) -> None:
        assert p.refund_id is not None  # noqa: S101 - decided only once accepted
        assert p.refund_key is not None  # noqa: S101
        try:
            status = self._provider.refund_status(p.refund_key)
        except TransientPaymentError as error:
            self._retry_refund(p, now, f"refund lookup failed: {error}")
            return
        if status is RefundStatus.SUCCEEDED:
            self._purchases.record_refunded(p.id, refund_id=p.refund_id)
        elif status is RefundStatus.NOT_FOUND:  # lost on its side: the same key again
            self._refund(p, now)
        else:
            self._retry_refund(p, now, f"provider says refund {status.value}")

    def _retry_refund(self, p: Purchase, now: datetime, reason: str) -> None:
        delay = self._policy.backoff(
            p.refund_attempts,
            self._policy.first_retry,
            self._policy.max_retry_delay,
            self._rng,
        )
        self._purchases.schedule_refund_retry(
            p.id, reason=reason, next_attempt_at=now + delay, due_at=p.next_refund_at
        )

    def _review(self, p: Purchase, reason: str) -> None:
        self._purchases.require_review(p.id, reason=reason, owner=CHECK_OWNER)

    def give_up(self, purchase_id: UUID, reason: str) -> None:
        """A step that keeps failing for a reason no retry changes: a person
        decides, instead of the saga trying for ever."""
        self._purchases.require_review(purchase_id, reason=reason, owner=CHECK_OWNER)

    def _check_delay(self, checks: int) -> timedelta:
        policy = self._policy
        return policy.backoff(
            checks, policy.first_check, policy.max_check_delay, self._rng
        )
