"""The purchase saga under every interleaving Hypothesis finds (in memory).

Rules: reserve, pay (capture), decline, provider timeout (before or after it
accepted), a charge left pending, status checks (the clock moves a little), hold
expiry (the clock moves past it), a late webhook, a duplicate webhook, refunds
down and up, status lookups down and up, a free enrollment taking a released
seat, consent to an alternative, and a saga restart (the application re-created
from the same stored events). After every step:

- held + taken <= capacity, and the lesson's holds are exactly the purchases'
- no access without a captured payment of the seat's price
- payment_checking never releases the seat or refunds before a check resolves
- at most one refund per payment, never of a payment that bought a seat
- captured - refunded >= the sum of confirmed prices; once settled (every
  provider healthy, the clock run on), equal, apart from what a person reviews.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from uuid import UUID

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from application.commands import EnrollStudent
from application.saga import SagaPolicy
from domain.errors import (
    AlreadyEnrolledError,
    AlternativePriceError,
    LessonFullError,
    PaidLessonError,
)
from domain.purchase import Purchase, Status
from tests.unit.fake_payment import Fault
from tests.unit.saga_world import HOLD_SECONDS, World

POLICY = SagaPolicy(max_checks=4, max_refund_attempts=4)
PRICES = (2500, 2500, 4000)
CAPACITIES = (3, 2, 2)
STUDENTS = st.sampled_from([f"s-{n}" for n in range(10)])
MAX_FREE_ENROLLMENTS = 2  # enough to take a released seat, not to fill lessons
PICK = st.integers(0, 10**6)
SETTLED = {
    Status.CONFIRMED,
    Status.DECLINED,
    Status.EXPIRED,
    Status.REFUNDED,
    Status.ALTERNATIVE_ACCEPTED,
    Status.MANUAL_REVIEW,
}


class PurchaseSagaMachine(RuleBasedStateMachine):
    @initialize()
    def open_lessons(self) -> None:
        self.world = World(policy=POLICY)
        self.lessons = [
            self.world.lesson(capacity=c, price_cents=p)
            for c, p in zip(CAPACITIES, PRICES, strict=True)
        ]
        self.purchases: list[UUID] = []
        self.enrollments = 0

    # -- the student and the provider ---------------------------------------

    @rule(lesson=st.integers(0, 2), student=STUDENTS)
    def reserve(self, lesson: int, student: str) -> None:
        with contextlib.suppress(LessonFullError, AlreadyEnrolledError):
            self.purchases.append(self.world.reserve(self.lessons[lesson], student))

    @precondition(lambda self: self.enrollments < MAX_FREE_ENROLLMENTS)
    @rule(lesson=st.integers(0, 2), student=STUDENTS)
    def enroll_for_free(self, lesson: int, student: str) -> None:
        """Someone else takes a seat the moment a hold releases it: enrolling in a
        paid lesson is refused, so they buy it elsewhere (no money of ours moves)."""
        self.enrollments += 1
        with pytest.raises(PaidLessonError):
            self.world.app.enroll(
                EnrollStudent(
                    lesson_id=self.lessons[lesson],
                    student_id=student,
                    request_id=f"free-{self.enrollments}",
                )
            )
        with contextlib.suppress(LessonFullError, AlreadyEnrolledError):
            self.world.sold_elsewhere(self.lessons[lesson], student)

    @precondition(lambda self: self._in(Status.RESERVED))
    @rule(pick=PICK)
    def pay(self, pick: int) -> None:
        self._advance(self._pick(pick, Status.RESERVED))

    @precondition(lambda self: self._in(Status.RESERVED))
    @rule(pick=PICK)
    def decline(self, pick: int) -> None:
        self.world.provider.decline_next = True
        self._advance(self._pick(pick, Status.RESERVED))
        self.world.provider.decline_next = False

    @precondition(lambda self: self._in(Status.RESERVED))
    @rule(pick=PICK, accepted=st.booleans())
    def provider_timeout(self, pick: int, accepted: bool) -> None:
        fault = Fault.LOST_AFTER if accepted else Fault.LOST_BEFORE
        self.world.provider.next_charge_fault = fault
        self._advance(self._pick(pick, Status.RESERVED))
        self.world.provider.next_charge_fault = Fault.NONE

    @precondition(lambda self: self._in(Status.RESERVED))
    @rule(pick=PICK, accepted=st.booleans())
    def charge_left_pending(self, pick: int, accepted: bool) -> None:
        """The student has not paid yet (and maybe the answer was lost too)."""
        self.world.provider.capture_at_once = False
        if accepted:
            self.world.provider.next_charge_fault = Fault.LOST_AFTER
        self._advance(self._pick(pick, Status.RESERVED))
        self.world.provider.capture_at_once = True
        self.world.provider.next_charge_fault = Fault.NONE

    @precondition(lambda self: self._in(Status.RESERVED))
    @rule(pick=PICK)
    def transient_failure(self, pick: int) -> None:
        self.world.provider.next_charge_fault = Fault.TRANSIENT
        self._advance(self._pick(pick, Status.RESERVED))
        self.world.provider.next_charge_fault = Fault.NONE

    @rule(seconds=st.integers(1, 120))
    def status_check(self, seconds: int) -> None:
        self.world.now += timedelta(seconds=seconds)
        self._advance_all()

    @rule()
    def hold_expiry(self) -> None:
        self.world.now += timedelta(seconds=HOLD_SECONDS + 1)
        self._advance_all()

    @precondition(lambda self: self._unpaid())
    @rule(pick=PICK, then_advance=st.booleans())
    def late_webhook(self, pick: int, then_advance: bool) -> None:
        """The student pays a pending charge; the webhook records the fact."""
        unpaid = self._unpaid()
        purchase_id = unpaid[pick % len(unpaid)]
        self.world.provider.pay(self.world.get(purchase_id).payment_key)
        self.world.webhook_captured(purchase_id)
        if then_advance:
            self._advance(purchase_id)

    @precondition(lambda self: self._paid())
    @rule(pick=PICK)
    def duplicate_webhook(self, pick: int) -> None:
        paid = self._paid()
        purchase_id = paid[pick % len(paid)]
        self.world.webhook_captured(purchase_id)
        self.world.webhook_captured(purchase_id)

    @rule(down=st.booleans())
    def refund_failure(self, down: bool) -> None:
        self.world.provider.refunds_down = down

    @rule(down=st.booleans())
    def status_lookups_fail(self, down: bool) -> None:
        self.world.provider.status_down = down

    @precondition(lambda self: self._in(Status.ALTERNATIVE_OFFERED))
    @rule(pick=PICK, lesson=st.integers(0, 2))
    def consent_to_an_alternative(self, pick: int, lesson: int) -> None:
        purchase_id = self._pick(pick, Status.ALTERNATIVE_OFFERED)
        try:
            view = self.world.purchases.accept_alternative(
                purchase_id, lesson_id=self.lessons[lesson], now=self.world.now
            )
        except (LessonFullError, AlreadyEnrolledError, AlternativePriceError):
            return
        assert view.alternative_purchase_id is not None
        self.purchases.append(view.alternative_purchase_id)

    @rule()
    def saga_restart(self) -> None:
        self.world.restarted()

    def teardown(self) -> None:
        if hasattr(self, "world"):
            self.settle()

    def settle(self) -> None:
        """Every provider healthy, every charge paid, the clock run on."""
        provider = self.world.provider
        provider.refunds_down = provider.status_down = False
        for key in list(provider.charges):
            provider.pay(key)
        for _ in range(POLICY.max_checks + POLICY.max_refund_attempts + 2):
            self.world.now += timedelta(hours=1)
            self._advance_all()
        purchases = [self.world.get(p) for p in self.purchases]
        assert all(p.status in SETTLED for p in purchases), [
            (p.id, p.status) for p in purchases if p.status not in SETTLED
        ]
        reviewed = {
            p.payment_key for p in purchases if p.status is Status.MANUAL_REVIEW
        }
        assert all(
            p.review_reason and p.review_owner
            for p in purchases
            if p.payment_key in reviewed
        )
        captured = sum(
            c.amount_cents
            for k, c in provider.charges.items()
            if c.status.value == "captured" and k not in reviewed
        )
        reviewed_payments = {
            provider.charges[k].payment_id for k in reviewed if k in provider.charges
        }
        refunded = sum(
            r.amount_cents
            for r in provider.refunds.values()
            if r.payment_id not in reviewed_payments
        )
        assert captured - refunded == self._confirmed_cents()

    # -- invariants ------------------------------------------------------------

    @invariant()
    def held_plus_taken_within_capacity_and_holds_match(self) -> None:
        if not hasattr(self, "world"):
            return
        purchases = [self.world.get(p) for p in self.purchases]
        for lesson_id, capacity in zip(self.lessons, CAPACITIES, strict=True):
            lesson = self.world.app.get_lesson(lesson_id)
            assert lesson.seats_taken + lesson.seats_held <= capacity
            holding = {
                p.id for p in purchases if p.hold_active and p.lesson_id == lesson_id
            }
            assert set(lesson.holds) == holding

    @invariant()
    def no_access_without_a_captured_payment(self) -> None:
        if not hasattr(self, "world"):
            return
        for purchase_id in self.purchases:
            p = self.world.get(purchase_id)
            if p.status is not Status.CONFIRMED:
                continue
            payer = self.world.get(p.funded_by) if p.funded_by else p
            charge = self.world.provider.charges[payer.payment_key]
            assert charge.status.value == "captured"
            assert (charge.payment_id, charge.amount_cents) == (
                p.payment_id,
                p.price_cents,
            )
            assert p.enrollment_id in self.world.app.get_lesson(p.lesson_id).seats

    @invariant()
    def checking_never_releases_or_refunds_before_a_check_resolves(self) -> None:
        if not hasattr(self, "world"):
            return
        resolving = (
            Purchase.PaymentFoundPending,
            Purchase.PaymentNotTaken,
            Purchase.PaymentDeclined,
            Purchase.PaymentCaptured,
        )
        for purchase_id in self.purchases:
            checking = False
            for event in self.world.app.events.get(purchase_id):
                if isinstance(event, Purchase.PaymentOutcomeUnknown):
                    checking = True
                elif isinstance(event, resolving):
                    checking = False
                elif checking:
                    assert not isinstance(
                        event, Purchase.HoldExpired | Purchase.RefundRequested
                    ), event

    @invariant()
    def at_most_one_refund_per_payment_and_never_of_a_seat(self) -> None:
        if not hasattr(self, "world"):
            return
        assert all(n == 1 for n in self.world.provider.refunds_per_payment().values())
        confirmed = {
            p.payment_id
            for p in map(self.world.get, self.purchases)
            if p.status is Status.CONFIRMED
        }
        refunded = {r.payment_id for r in self.world.provider.refunds.values()}
        assert not confirmed & refunded

    @invariant()
    def money_in_covers_every_seat_sold(self) -> None:
        if not hasattr(self, "world"):
            return
        provider = self.world.provider
        net = provider.captured_cents() - provider.refunded_cents()
        assert net >= self._confirmed_cents()

    # -- helpers ---------------------------------------------------------------

    def _in(self, *statuses: Status) -> list[UUID]:
        if not hasattr(self, "world"):
            return []
        return [p for p in self.purchases if self.world.get(p).status in statuses]

    def _pick(self, pick: int, status: Status) -> UUID:
        candidates = self._in(status)
        return candidates[pick % len(candidates)]

    def _charges(self) -> list[tuple[UUID, str]]:
        """(purchase, the status of its charge at the provider)."""
        if not hasattr(self, "world"):
            return []
        charges = self.world.provider.charges
        keys = {self.world.get(p).payment_key: p for p in self.purchases}
        return [(keys[k], c.status.value) for k, c in charges.items() if k in keys]

    def _unpaid(self) -> list[UUID]:
        return [p for p, status in self._charges() if status == "pending"]

    def _paid(self) -> list[UUID]:
        return [p for p, status in self._charges() if status == "captured"]

    def _advance(self, purchase_id: UUID) -> None:
        self.world.saga.advance(purchase_id, self.world.now)

    def _advance_all(self) -> None:
        for purchase_id in self.purchases:
            self._advance(purchase_id)

    def _confirmed_cents(self) -> int:
        return sum(
            p.price_cents
            for p in map(self.world.get, self.purchases)
            if p.status is Status.CONFIRMED
        )


PurchaseSagaMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, derandomize=True
)
TestPurchaseSaga = PurchaseSagaMachine.TestCase
