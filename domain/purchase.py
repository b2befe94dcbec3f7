"""The Purchase aggregate: a paid seat's process, from hold to access or refund.

A purchase cannot live in one transaction (the student pays elsewhere, later), so
its state is recorded fact by fact. Two axes decide every transition: the seat
(`hold_active`: the lesson still holds it for us) and the money (`payment_open`:
a charge was asked for and its outcome is not settled; `payment_id`: captured).
Each public command checks the allowed previous state and raises one error per
rule; a repeated fact (the same capture, the same refund) records nothing.
"""

from __future__ import annotations

import enum
import hashlib
import re
from datetime import datetime, timedelta
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import (
    HoldNotActiveError,
    HoldNotDueError,
    InvalidPurchaseError,
    NoAlternativeOfferedError,
    NoCapturedPaymentError,
    NotAwaitingPaymentError,
    NotInReviewError,
    NotRefundableError,
    PaymentMismatchError,
    PaymentStillCheckingError,
    RefundNotPendingError,
    ResolutionRefusedError,
    StepNotDueError,
)

MAX_HOLD = timedelta(days=1)


class Status(enum.StrEnum):
    RESERVED = "reserved"  # seat held; the charge is due at `next_charge_at`
    PAYMENT_PENDING = "payment_pending"  # charge asked for; provider's answer due
    PAYMENT_CHECKING = "payment_checking"  # outcome unknown: checks, then a person
    CAPTURED = "captured"  # money in; the saga grants access or compensates next
    CONFIRMED = "confirmed"  # access granted: an enrollment exists
    DECLINED = "declined"  # the provider refused; seat released
    EXPIRED = "expired"  # hold ran out; seat released (payment may still be open)
    ALTERNATIVE_OFFERED = "alternative_offered"  # paid late; refund unless consent
    ALTERNATIVE_ACCEPTED = "alternative_accepted"  # the money bought another seat
    REFUND_PENDING = "refund_pending"  # intent recorded; provider not confirmed yet
    REFUNDED = "refunded"
    MANUAL_REVIEW = "manual_review"  # an owner decides; nothing moves on its own
    CANCELLED = "cancelled"  # an operator cancelled it in review: no charge, no seat


class Resolution(enum.StrEnum):
    """What an operator decides for a purchase in manual review."""

    REFUND = "refund"  # the captured money goes back (the saga refunds it)
    CONFIRM = "confirm"  # the captured money buys the seat: access is granted
    CANCEL = "cancel"  # nothing was captured: the seat goes back, nothing is charged


AWAITING_PAYMENT = {Status.RESERVED, Status.PAYMENT_PENDING, Status.PAYMENT_CHECKING}


def payment_key_for(purchase_id: UUID) -> str:
    """Every charge, retry and lookup of one purchase names the same payment."""
    return f"purchase-{purchase_id}"


# What a provider accepts as an idempotency key: visible ASCII, at most 255.
_KEY_SAFE = re.compile(r"[!-~]{1,200}")


def refund_key_for(payment_id: str) -> str:
    """At most one refund per payment: the key is the payment's, not the attempt's.

    A payment id that is no valid key part (a space, a non-ASCII character, 200+
    characters: whatever a provider sent) is named by its SHA-256 instead, so the
    key is still stable and valid: an invalid one made every refund attempt fail
    before it left, for ever."""
    if _KEY_SAFE.fullmatch(payment_id):
        return f"refund-{payment_id}"
    return f"refund-sha256-{hashlib.sha256(payment_id.encode()).hexdigest()}"


class Purchase(Aggregate):
    """One student's paid seat in one lesson, at the price fixed when reserved."""

    class Reserved(Aggregate.Created):
        lesson_id: UUID
        student_id: str
        request_id: str
        price_cents: int
        reserved_at: datetime
        hold_expires_at: datetime

    class PaymentRequested(Aggregate.Event):
        next_check_at: datetime

    class PaymentOutcomeUnknown(Aggregate.Event):
        reason: str
        next_check_at: datetime
        owner: str

    class PaymentCheckScheduled(Aggregate.Event):
        reason: str
        next_check_at: datetime

    class PaymentFoundPending(Aggregate.Event):
        next_check_at: datetime

    class PaymentNotTaken(Aggregate.Event):
        reason: str
        retry_at: datetime

    class PaymentDeclined(Aggregate.Event):
        reason: str

    class PaymentCaptured(Aggregate.Event):
        payment_id: str
        amount_cents: int

    class PaymentTransferred(Aggregate.Event):
        from_purchase_id: UUID
        payment_id: str
        amount_cents: int

    class HoldExpired(Aggregate.Event):
        expired_at: datetime

    class AccessGranted(Aggregate.Event):
        enrollment_id: UUID

    class AlternativeOffered(Aggregate.Event):
        offer_expires_at: datetime

    class AlternativeAccepted(Aggregate.Event):
        lesson_id: UUID
        purchase_id: UUID

    class RefundRequested(Aggregate.Event):
        refund_key: str
        amount_cents: int
        requested_at: datetime

    class RefundAccepted(Aggregate.Event):
        refund_id: str
        next_check_at: datetime

    class RefundRetryScheduled(Aggregate.Event):
        reason: str
        next_attempt_at: datetime

    class Refunded(Aggregate.Event):
        refund_id: str

    class ManualReviewRequired(Aggregate.Event):
        reason: str
        owner: str

    class ReviewResolved(Aggregate.Event):
        decision: str  # a Resolution's value
        operator: str
        reason: str
        resolved_at: datetime

    @event(Reserved)
    def __init__(
        self,
        *,
        id: UUID,  # the originator id, derived from lesson and request
        lesson_id: UUID,
        student_id: str,
        request_id: str,
        price_cents: int,
        reserved_at: datetime,
        hold_expires_at: datetime,
    ) -> None:
        self.lesson_id = lesson_id
        self.student_id = student_id
        self.request_id = request_id
        self.price_cents = price_cents
        self.hold_expires_at = hold_expires_at
        self.status = Status.RESERVED
        self.hold_active = True
        self.payment_open = False
        self.next_charge_at: datetime | None = reserved_at
        self.charge_attempts = 0
        self.next_check_at: datetime | None = None
        self.checks = 0
        self.check_owner: str | None = None
        self.payment_id: str | None = None
        self.captured_cents = 0
        self.funded_by: UUID | None = None
        self.enrollment_id: UUID | None = None
        self.offer_expires_at: datetime | None = None
        self.alternative_lesson_id: UUID | None = None
        self.alternative_purchase_id: UUID | None = None
        self.refund_key: str | None = None
        self.refund_cents = 0
        self.refund_id: str | None = None
        self.refund_attempts = 0
        self.next_refund_at: datetime | None = None
        self.refunded = False
        self.review_reason: str | None = None
        self.review_owner: str | None = None
        self.resolved_by: str | None = None
        self.resolution: str | None = None

    @classmethod
    def reserve(
        cls,
        *,
        purchase_id: UUID,
        lesson_id: UUID,
        student_id: str,
        request_id: str,
        price_cents: int,
        now: datetime,
        hold: timedelta,
    ) -> Purchase:
        if price_cents <= 0:
            msg = "the lesson is free: enroll instead of buying a seat"
            raise InvalidPurchaseError(msg)
        if not timedelta(0) < hold <= MAX_HOLD:
            msg = f"a hold lasts more than 0 seconds and at most {MAX_HOLD}"
            raise InvalidPurchaseError(msg)
        if now.utcoffset() is None:
            raise InvalidPurchaseError("now must carry a time zone")
        return cls(
            id=purchase_id,
            lesson_id=lesson_id,
            student_id=student_id,
            request_id=request_id,
            price_cents=price_cents,
            reserved_at=now,
            hold_expires_at=now + hold,
        )

    @property
    def payment_key(self) -> str:
        return payment_key_for(self.id)

    # -- the money ------------------------------------------------------------

    def request_payment(self, *, next_check_at: datetime) -> None:
        if self.status is not Status.RESERVED:
            raise NotAwaitingPaymentError(self._refusal("request a payment"))
        self._request_payment(next_check_at=next_check_at)

    def record_outcome_unknown(
        self, *, reason: str, next_check_at: datetime, owner: str
    ) -> None:
        """The charge left and no answer came: check before anything else."""
        if self.status is not Status.PAYMENT_PENDING:
            raise NotAwaitingPaymentError(self._refusal("record an unknown outcome"))
        self._outcome_unknown(reason=reason, next_check_at=next_check_at, owner=owner)

    def schedule_check(
        self, *, reason: str, next_check_at: datetime, due_at: datetime | None
    ) -> None:
        """The provider still has no final answer (or could not be asked).

        `due_at`: the check's deadline the step was decided on; a check counts
        once per deadline, however many processes looked at it."""
        if not self.payment_open:
            raise NotAwaitingPaymentError(self._refusal("schedule a payment check"))
        self._require_due(self.next_check_at, due_at, "count a payment check")
        self._schedule_check(reason=reason, next_check_at=next_check_at)

    def record_found_pending(
        self, *, next_check_at: datetime, due_at: datetime | None
    ) -> None:
        """The provider holds the charge, not yet paid: the outcome is known again,
        so a check that was unsure ends, and the hold's expiry applies once more."""
        if not self.payment_open:
            raise NotAwaitingPaymentError(self._refusal("record a pending charge"))
        self._require_due(self.next_check_at, due_at, "count a payment check")
        self._found_pending(next_check_at=next_check_at)

    def record_not_taken(self, *, reason: str, retry_at: datetime) -> None:
        """The provider holds nothing under our key: charging again is safe."""
        if not self.payment_open:
            raise NotAwaitingPaymentError(self._refusal("record a charge not taken"))
        self._not_taken(reason=reason, retry_at=retry_at)

    def record_declined(self, *, reason: str) -> None:
        if not self.payment_open:
            raise NotAwaitingPaymentError(self._refusal("record a decline"))
        self._decline(reason=reason)

    def record_captured(self, *, payment_id: str, amount_cents: int) -> None:
        """Money moved. Late or not, it is recorded; the saga decides what follows."""
        if self.payment_id == payment_id:
            return  # the same fact again (a duplicate webhook)
        if self.payment_id is not None:
            msg = f"purchase {self.id} was paid by {self.payment_id}, not {payment_id}"
            raise PaymentMismatchError(msg)
        self._capture(payment_id=payment_id, amount_cents=amount_cents)

    def record_transfer(
        self, *, from_purchase_id: UUID, payment_id: str, amount_cents: int
    ) -> None:
        """A new reservation paid by an earlier purchase's money (with consent)."""
        if self.status is not Status.RESERVED or self.payment_id is not None:
            raise NotAwaitingPaymentError(self._refusal("take a transfer"))
        self._transfer(
            from_purchase_id=from_purchase_id,
            payment_id=payment_id,
            amount_cents=amount_cents,
        )

    # -- the seat -------------------------------------------------------------

    def expire_hold(self, *, now: datetime) -> None:
        if self.status is Status.PAYMENT_CHECKING:
            raise PaymentStillCheckingError(self._refusal("release the seat"))
        if not self.hold_active or self.status not in AWAITING_PAYMENT:
            raise HoldNotActiveError(self._refusal("expire the hold"))
        if now < self.hold_expires_at:
            raise HoldNotDueError(self._refusal(f"expire the hold at {now}"))
        self._expire(expired_at=now)

    def grant_access(self, *, enrollment_id: UUID) -> None:
        if self.payment_id is None or self.status is not Status.CAPTURED:
            raise NoCapturedPaymentError(self._refusal("grant access"))
        if not self.hold_active:
            raise HoldNotActiveError(self._refusal("grant access"))
        self._grant(enrollment_id=enrollment_id)

    # -- compensation ---------------------------------------------------------

    def offer_alternative(self, *, offer_expires_at: datetime) -> None:
        if self.status is not Status.CAPTURED or self.hold_active:
            raise NoCapturedPaymentError(self._refusal("offer an alternative"))
        self._offer(offer_expires_at=offer_expires_at)

    def accept_alternative(self, *, lesson_id: UUID, purchase_id: UUID) -> None:
        if self.status is not Status.ALTERNATIVE_OFFERED:
            raise NoAlternativeOfferedError(self._refusal("take an alternative"))
        self._accept(lesson_id=lesson_id, purchase_id=purchase_id)

    def request_refund(self, *, now: datetime) -> None:
        """The intent first, with a key stable per payment; the call comes after."""
        if self.refund_key is not None:
            return  # already intended: a second refund of one payment never exists
        refundable = {Status.CAPTURED, Status.ALTERNATIVE_OFFERED, Status.MANUAL_REVIEW}
        if self.payment_id is None or self.funded_by is not None:
            raise NoCapturedPaymentError(self._refusal("refund"))
        if self.status not in refundable:
            raise NotRefundableError(self._refusal("refund"))
        self._request_refund(
            refund_key=refund_key_for(self.payment_id),
            amount_cents=self.captured_cents,
            requested_at=now,
        )

    def refund_cancelled_seat(self, *, enrollment_id: UUID, now: datetime) -> None:
        """The student cancelled the enrollment this money bought: the money goes
        back, under the payment's one refund key (the caller releases the seat)."""
        if self.status is not Status.CONFIRMED or self.enrollment_id != enrollment_id:
            raise NotRefundableError(self._refusal("refund a cancelled seat"))
        if self.payment_id is None:
            raise NoCapturedPaymentError(self._refusal("refund a cancelled seat"))
        self._request_refund(
            refund_key=refund_key_for(self.payment_id),
            amount_cents=self.captured_cents,
            requested_at=now,
        )

    def record_refund_accepted(
        self, *, refund_id: str, next_check_at: datetime
    ) -> None:
        if self.status is not Status.REFUND_PENDING:
            raise RefundNotPendingError(self._refusal("record a refund accepted"))
        self._refund_accepted(refund_id=refund_id, next_check_at=next_check_at)

    def schedule_refund_retry(
        self, *, reason: str, next_attempt_at: datetime, due_at: datetime | None
    ) -> None:
        """`due_at`: the attempt's deadline the step was decided on (counted once)."""
        if self.status is not Status.REFUND_PENDING:
            raise RefundNotPendingError(self._refusal("retry a refund"))
        self._require_due(self.next_refund_at, due_at, "count a refund attempt")
        self._refund_retry(reason=reason, next_attempt_at=next_attempt_at)

    def record_refunded(self, *, refund_id: str) -> None:
        if self.refunded:
            return  # a duplicate confirmation
        if self.refund_key is None:
            raise RefundNotPendingError(self._refusal("record a refund"))
        self._refund(refund_id=refund_id)

    def require_review(self, *, reason: str, owner: str) -> None:
        """A person decides; what is held stays held, what is owed stays visible."""
        if self.status is Status.MANUAL_REVIEW:
            return  # the first reason stands
        final = {Status.CONFIRMED, Status.REFUNDED, Status.ALTERNATIVE_ACCEPTED}
        if self.status in final:
            raise NotRefundableError(self._refusal("ask for a review"))
        self._review(reason=reason, owner=owner)

    def resolve_review(
        self,
        *,
        decision: Resolution,
        operator: str,
        reason: str,
        now: datetime,
        enrollment_id: UUID | None = None,
    ) -> None:
        """An operator's decision on a purchase in manual review, with who and why.

        Only manual review is settled by a person: in every other state the saga
        still owns the next step. Refund and confirm need captured money (confirm
        also the `enrollment_id` its seat becomes); cancel needs none captured."""
        if self.status is not Status.MANUAL_REVIEW:
            raise NotInReviewError(self._refusal(f"resolve it with --{decision}"))
        if not operator.strip() or not reason.strip():
            raise ResolutionRefusedError("a decision names its operator and reason")
        captured = self.payment_id is not None and self.funded_by is None
        if decision is Resolution.CANCEL and self.payment_id is not None:
            msg = f"purchase {self.id} captured {self.captured_cents} cents"
            raise ResolutionRefusedError(
                f"{msg}: resolve it with --refund or --confirm"
            )
        if decision is not Resolution.CANCEL and not captured:
            msg = f"purchase {self.id} has no captured payment"
            raise ResolutionRefusedError(f"{msg}: resolve it with --cancel")
        if decision is Resolution.REFUND and self.refunded:
            raise ResolutionRefusedError(f"purchase {self.id} is already refunded")
        if decision is Resolution.CONFIRM and enrollment_id is None:
            raise ResolutionRefusedError("confirming names the enrollment it becomes")
        self._resolve(
            decision=decision.value,
            operator=operator,
            reason=reason,
            resolved_at=now,
        )
        if decision is Resolution.CONFIRM:
            assert enrollment_id is not None  # noqa: S101 - checked above
            self._grant(enrollment_id=enrollment_id)
        elif decision is Resolution.REFUND and self.refund_key is None:
            assert self.payment_id is not None  # noqa: S101 - captured, checked above
            self._request_refund(
                refund_key=refund_key_for(self.payment_id),
                amount_cents=self.captured_cents,
                requested_at=now,
            )

    def _require_due(
        self, deadline: datetime | None, due_at: datetime | None, what: str
    ) -> None:
        # Each counted step moves its deadline: a step decided on an older one was
        # already taken (by a process whose claim lapsed, or ours before a restart).
        if deadline != due_at:
            raise StepNotDueError(self._refusal(f"{what} due at {due_at}"))

    def _refusal(self, what: str) -> str:
        return f"purchase {self.id} is {self.status}: cannot {what}"

    # -- the recorded facts: assignments only (they re-run on replay) ---------

    @event(PaymentRequested)
    def _request_payment(self, next_check_at: datetime) -> None:
        self.status = Status.PAYMENT_PENDING
        self.payment_open = True
        self.next_charge_at = None
        self.next_check_at = next_check_at
        self.checks = 0

    @event(PaymentOutcomeUnknown)
    def _outcome_unknown(
        self, reason: str, next_check_at: datetime, owner: str
    ) -> None:
        self.status = Status.PAYMENT_CHECKING
        self.next_check_at = next_check_at
        self.check_owner = owner

    @event(PaymentCheckScheduled)
    def _schedule_check(self, reason: str, next_check_at: datetime) -> None:
        self.checks += 1
        self.next_check_at = next_check_at

    @event(PaymentFoundPending)
    def _found_pending(self, next_check_at: datetime) -> None:
        self.checks += 1
        self.next_check_at = next_check_at
        if self.status is Status.PAYMENT_CHECKING:
            self.status = Status.PAYMENT_PENDING

    @event(PaymentNotTaken)
    def _not_taken(self, reason: str, retry_at: datetime) -> None:
        self.charge_attempts += 1
        self.payment_open = False
        self.next_check_at = None
        if self.status in AWAITING_PAYMENT:
            self.status = Status.RESERVED
            self.next_charge_at = retry_at

    @event(PaymentDeclined)
    def _decline(self, reason: str) -> None:
        self.payment_open = False
        self.next_check_at = None
        if self.hold_active:
            self.status = Status.DECLINED
            self.hold_active = False
        elif self.status is Status.MANUAL_REVIEW and self.payment_id is None:
            self.status = Status.EXPIRED  # the open payment was all it waited for

    @event(PaymentCaptured)
    def _capture(self, payment_id: str, amount_cents: int) -> None:
        self.payment_id = payment_id
        self.captured_cents = amount_cents
        self.payment_open = False
        self.next_check_at = None
        self.next_charge_at = None
        self.status = Status.CAPTURED

    @event(PaymentTransferred)
    def _transfer(
        self, from_purchase_id: UUID, payment_id: str, amount_cents: int
    ) -> None:
        self.funded_by = from_purchase_id
        self.payment_id = payment_id
        self.captured_cents = amount_cents
        self.next_charge_at = None
        self.status = Status.CAPTURED

    @event(HoldExpired)
    def _expire(self, expired_at: datetime) -> None:
        self.status = Status.EXPIRED
        self.hold_active = False
        self.next_charge_at = None
        self.checks = 0  # watching an open charge after expiry has its own limit

    @event(AccessGranted)
    def _grant(self, enrollment_id: UUID) -> None:
        self.status = Status.CONFIRMED
        self.hold_active = False
        self.enrollment_id = enrollment_id

    @event(AlternativeOffered)
    def _offer(self, offer_expires_at: datetime) -> None:
        self.status = Status.ALTERNATIVE_OFFERED
        self.offer_expires_at = offer_expires_at

    @event(AlternativeAccepted)
    def _accept(self, lesson_id: UUID, purchase_id: UUID) -> None:
        self.status = Status.ALTERNATIVE_ACCEPTED
        self.alternative_lesson_id = lesson_id
        self.alternative_purchase_id = purchase_id

    @event(RefundRequested)
    def _request_refund(
        self, refund_key: str, amount_cents: int, requested_at: datetime
    ) -> None:
        self.status = Status.REFUND_PENDING
        self.hold_active = False  # the caller releases a seat still held, same save
        self.refund_key = refund_key
        self.refund_cents = amount_cents
        self.next_refund_at = requested_at

    @event(RefundAccepted)
    def _refund_accepted(self, refund_id: str, next_check_at: datetime) -> None:
        self.refund_id = refund_id
        self.next_refund_at = next_check_at

    @event(RefundRetryScheduled)
    def _refund_retry(self, reason: str, next_attempt_at: datetime) -> None:
        self.refund_attempts += 1
        self.next_refund_at = next_attempt_at

    @event(Refunded)
    def _refund(self, refund_id: str) -> None:
        self.status = Status.REFUNDED
        self.refund_id = refund_id
        self.refunded = True
        self.next_refund_at = None

    @event(ReviewResolved)
    def _resolve(
        self, decision: str, operator: str, reason: str, resolved_at: datetime
    ) -> None:
        self.resolved_by = operator
        self.resolution = decision
        self.status = Status.CAPTURED  # confirm: AccessGranted follows at once
        if decision == Resolution.CANCEL:
            self.status = Status.CANCELLED
            self.hold_active = False  # the caller releases a seat still held
            self.payment_open = False
            self.next_check_at = None
            self.next_charge_at = None
        elif decision == Resolution.REFUND:
            # A refund intent recorded before the review is tried afresh under its
            # key; without one, RefundRequested follows at once.
            self.status = Status.REFUND_PENDING
            self.hold_active = False
            self.refund_attempts = 0
            self.next_refund_at = resolved_at

    @event(ManualReviewRequired)
    def _review(self, reason: str, owner: str) -> None:
        self.status = Status.MANUAL_REVIEW
        self.review_reason = reason
        self.review_owner = owner
