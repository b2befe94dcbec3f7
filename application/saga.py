"""The purchase saga's decisions: given a purchase and the time, what to do next.

Every trigger — a recorded event, a webhook's fact, a deadline firing (hold expiry,
the next status check, the next refund attempt, the end of an offer) — reduces to
"wake this purchase at `now`": the state says what is due, so a saga process
that restarts, or a second one that wakes the same purchase, decides the same.
The rules that matter most:

- a timeout on the payment call goes to `payment_checking`, never straight to a
  compensation; while checking, the seat is never released and nothing refunded;
- checks are bounded (growing delays with jitter), then a person decides;
- money that arrives after the hold was released buys nothing silently: an offer
  of another lesson (only with consent), or a refund at the offer's end.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import attrs

from application.backoff import BackoffPolicy, Jitter
from domain.purchase import Purchase, Status

CHECK_OWNER = "payments on-call"  # who looks when checks run out


@attrs.frozen(kw_only=True)
class SagaPolicy:
    webhook_grace: timedelta = timedelta(seconds=30)  # then we ask ourselves
    first_check: timedelta = timedelta(seconds=2)
    max_check_delay: timedelta = timedelta(minutes=5)
    max_checks: int = 8
    first_retry: timedelta = timedelta(seconds=1)
    max_retry_delay: timedelta = timedelta(minutes=5)
    max_refund_attempts: int = 8
    # A late payment is offered another lesson for this long, then refunded.
    # Zero refunds at once (docs/decisions/2026-11-30-late-payment-policy.md).
    offer_window: timedelta = timedelta(minutes=15)

    def backoff(
        self, attempt: int, first: timedelta, ceiling: timedelta, rng: random.Random
    ) -> timedelta:
        """Doubling from `first` with each `attempt` (0 for the first retry), at
        most `ceiling`, and equal jitter: drawn from the upper half of that, spread
        but never ~0."""
        policy = BackoffPolicy(
            first=first.total_seconds(),
            cap=ceiling.total_seconds(),
            jitter=Jitter.EQUAL,
        )
        return timedelta(seconds=policy.delay(attempt + 1, rng))


# The commands a decision names; the runner (application.saga_runner) does them.
@attrs.frozen
class RequestPayment:
    """Record the intent to charge, then call the provider under the key."""


@attrs.frozen
class CheckPayment:
    """Ask the provider what it holds under the payment key."""


@attrs.frozen
class ExpireHold:
    """Release the seat: the hold ran out and no payment is being checked."""


@attrs.frozen
class GrantAccess:
    """Captured while the seat is held: the hold becomes an enrollment."""


@attrs.frozen
class OfferAlternative:
    until: datetime


@attrs.frozen
class RequestRefund:
    """Record the refund intent (stable key); the call is the next step."""


@attrs.frozen
class CallRefund:
    """Call the provider's refund under the recorded key (safe to repeat)."""


@attrs.frozen
class CheckRefund:
    """The provider took the refund; ask whether it went through."""


@attrs.frozen
class RequireReview:
    reason: str


Command = (
    RequestPayment
    | CheckPayment
    | ExpireHold
    | GrantAccess
    | OfferAlternative
    | RequestRefund
    | CallRefund
    | CheckRefund
    | RequireReview
)


@attrs.frozen
class Decision:
    """Do `command` now (None: nothing is due); wake again at `next_deadline`."""

    command: Command | None
    next_deadline: datetime | None


def decide(p: Purchase, now: datetime, policy: SagaPolicy) -> Decision:  # noqa: PLR0911
    """One branch per state, in the order a purchase passes them."""
    s = p.status
    if s is Status.CAPTURED:
        return Decision(_after_capture(p, now, policy), None)
    if s is Status.RESERVED:
        if now >= p.hold_expires_at:
            return Decision(ExpireHold(), None)
        return _due(RequestPayment(), p.next_charge_at, now, p.hold_expires_at)
    if s is Status.PAYMENT_PENDING:
        if now >= p.hold_expires_at:
            # The charge is still open: the seat goes, the checks go on
            # (a capture after this is a late payment).
            return Decision(ExpireHold(), None)
        # A charge the provider holds as pending is known, not unknown: the hold's
        # expiry bounds this phase, so checks here run without a limit.
        return _due(CheckPayment(), p.next_check_at, now, p.hold_expires_at)
    if s is Status.PAYMENT_CHECKING or (s is Status.EXPIRED and p.payment_open):
        # No hold expiry here: an unknown outcome keeps the seat until it is known.
        return _due(_check(p, policy), p.next_check_at, now)
    if s is Status.ALTERNATIVE_OFFERED:
        return _due(RequestRefund(), p.offer_expires_at, now)
    if s is Status.REFUND_PENDING:
        if p.refund_attempts >= policy.max_refund_attempts:
            reason = f"refund not confirmed after {p.refund_attempts} attempts"
            return _due(RequireReview(reason), p.next_refund_at, now)
        step = CheckRefund() if p.refund_id is not None else CallRefund()
        return _due(step, p.next_refund_at, now)
    return Decision(None, None)  # settled, or a person decides


def _after_capture(p: Purchase, now: datetime, policy: SagaPolicy) -> Command:
    if p.hold_active:
        if p.captured_cents != p.price_cents:
            return RequireReview(
                f"captured {p.captured_cents} cents for a {p.price_cents}-cent seat"
            )
        return GrantAccess()
    # Late: the hold was released and may be someone else's seat by now.
    if policy.offer_window > timedelta(0):
        return OfferAlternative(until=now + policy.offer_window)
    return RequestRefund()


def _check(p: Purchase, policy: SagaPolicy) -> Command:
    if p.checks >= policy.max_checks:
        return RequireReview(f"payment still unsettled after {p.checks} checks")
    return CheckPayment()


def _due(
    command: Command, at: datetime | None, now: datetime, *later: datetime
) -> Decision:
    """`command` if its time has come; otherwise wake at the earliest deadline."""
    if at is not None and now >= at:
        return Decision(command, None)
    deadlines = [d for d in (at, *later) if d is not None]
    return Decision(None, min(deadlines) if deadlines else None)
