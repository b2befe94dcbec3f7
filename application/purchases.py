"""Purchase use cases: each records one fact, in one save with the seat it moves.

A purchase's hold lives on the lesson, so every step that changes the seat (hold,
release, conversion to an enrollment) saves the purchase, the lesson and the
enrollment together: the seat count and the process can never disagree. A step
that loses a race on the lesson's version is decided again on fresh state.
What step comes next is not decided here: `application.saga.decide` does that.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from uuid import UUID, uuid5

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from application.club_store import MAX_ATTEMPTS, ClubStore, back_off, is_known
from application.errors import ContentionError, NotFoundError, UnknownStudentError
from application.idempotency import KeyReusedError
from application.ids import CLUB_NS
from application.purchase_view import PurchaseView, view_of
from domain.enrollment import Enrollment
from domain.errors import AlternativePriceError
from domain.lesson import Lesson
from domain.purchase import Purchase, Resolution, Status

KEY_PREFIX = "purchase-"
ALTERNATIVE_REQUEST = "alternative-of-"  # the request id of a consented alternative

# What one step does to a fresh purchase; returns the other aggregates to save.
Step = Callable[[Purchase], list[Aggregate]]


def purchase_id_for(lesson_id: UUID, request_id: str) -> UUID:
    """A retried reservation finds the purchase its first attempt committed."""
    return uuid5(CLUB_NS, f"purchase:{lesson_id}:{request_id}")


def alternative_id_for(purchase_id: UUID, lesson_id: UUID) -> UUID:
    """Consenting twice to the same alternative names the same new purchase."""
    return uuid5(CLUB_NS, f"alternative:{purchase_id}:{lesson_id}")


def enrollment_id_of(purchase_id: UUID) -> UUID:
    return uuid5(CLUB_NS, f"enrollment-of-purchase:{purchase_id}")


def purchase_id_from_key(idempotency_key: str) -> UUID | None:
    """The purchase a payment key names (webhooks carry our key), or None."""
    if not idempotency_key.startswith(KEY_PREFIX):
        return None
    try:
        return UUID(idempotency_key.removeprefix(KEY_PREFIX))
    except ValueError:
        return None


class PurchaseUseCases(ClubStore):
    """The purchase's use cases, methods of `ClubApplication` (its base class)."""

    def reserve_purchase(
        self,
        *,
        lesson_id: UUID,
        student_id: str,
        request_id: str,
        now: datetime,
        hold_seconds: float,
    ) -> PurchaseView:
        """Hold a seat at the lesson's current price until `now + hold_seconds`."""
        purchase_id = purchase_id_for(lesson_id, request_id)
        if not is_known(self.students, student_id):
            raise UnknownStudentError(student_id)  # e-mails need the profile's address
        for attempt in range(MAX_ATTEMPTS):
            earlier = self._find_purchase(purchase_id)
            if earlier is not None:  # the first attempt's reply was lost
                if earlier.student_id != student_id:
                    raise KeyReusedError(request_id)
                return view_of(earlier)
            lesson = self.get_lesson(lesson_id)
            purchase = Purchase.reserve(
                purchase_id=purchase_id,
                lesson_id=lesson_id,
                student_id=student_id,
                request_id=request_id,
                price_cents=lesson.price_cents,
                now=now,
                hold=timedelta(seconds=hold_seconds),
            )
            lesson.hold_seat(
                purchase_id=purchase_id,
                student_id=student_id,
                until=purchase.hold_expires_at,
            )
            try:
                self.save(lesson, purchase)
            except IntegrityError:
                back_off(attempt)
                continue
            return view_of(purchase)
        raise ContentionError(f"lesson {lesson_id} is too busy, try again")

    def get_purchase(self, purchase_id: UUID) -> Purchase:
        purchase = self._find_purchase(purchase_id)
        if purchase is None:
            raise NotFoundError("purchase", purchase_id)
        return purchase

    def view_purchase(self, purchase_id: UUID) -> PurchaseView:
        return view_of(self.get_purchase(purchase_id))

    # -- the money: facts the provider reports --------------------------------

    def request_payment(self, purchase_id: UUID, *, next_check_at: datetime) -> None:
        self._change_purchase(
            purchase_id,
            _only(lambda p: p.request_payment(next_check_at=next_check_at)),
        )

    def record_payment_unknown(
        self, purchase_id: UUID, *, reason: str, next_check_at: datetime, owner: str
    ) -> None:
        self._change_purchase(
            purchase_id,
            _only(
                lambda p: p.record_outcome_unknown(
                    reason=reason, next_check_at=next_check_at, owner=owner
                )
            ),
        )

    def schedule_check(
        self,
        purchase_id: UUID,
        *,
        reason: str,
        next_check_at: datetime,
        due_at: datetime | None,
    ) -> None:
        self._change_purchase(
            purchase_id,
            _only(
                lambda p: p.schedule_check(
                    reason=reason, next_check_at=next_check_at, due_at=due_at
                )
            ),
        )

    def record_payment_found_pending(
        self, purchase_id: UUID, *, next_check_at: datetime, due_at: datetime | None
    ) -> None:
        self._change_purchase(
            purchase_id,
            _only(
                lambda p: p.record_found_pending(
                    next_check_at=next_check_at, due_at=due_at
                )
            ),
        )

    def record_payment_not_taken(
        self, purchase_id: UUID, *, reason: str, retry_at: datetime
    ) -> None:
        self._change_purchase(
            purchase_id,
            _only(lambda p: p.record_not_taken(reason=reason, retry_at=retry_at)),
        )

    def record_payment_declined(
        self, purchase_id: UUID, *, reason: str
    ) -> PurchaseView:
        """A decline for a payment already settled (captured, or found absent) is a
        stale report, out of order: it changes nothing."""

        def decline(purchase: Purchase) -> list[Aggregate]:
            if not purchase.payment_open:
                return []
            was_holding = purchase.hold_active
            purchase.record_declined(reason=reason)
            return self._released_hold(purchase) if was_holding else []

        return self._change_purchase(purchase_id, decline)

    def record_payment_captured(
        self, purchase_id: UUID, *, payment_id: str, amount_cents: int
    ) -> PurchaseView:
        """Recorded whenever it comes, late or repeated; the saga decides next."""
        return self._change_purchase(
            purchase_id,
            _only(
                lambda p: p.record_captured(
                    payment_id=payment_id, amount_cents=amount_cents
                )
            ),
        )

    # -- the seat -------------------------------------------------------------

    def expire_hold(self, purchase_id: UUID, *, now: datetime) -> PurchaseView:
        def expire(purchase: Purchase) -> list[Aggregate]:
            purchase.expire_hold(now=now)
            return self._released_hold(purchase)

        return self._change_purchase(purchase_id, expire)

    def grant_access(self, purchase_id: UUID) -> PurchaseView:
        """The held seat becomes an enrollment, confirmed in the same save."""

        def grant(purchase: Purchase) -> list[Aggregate]:
            enrollment_id = enrollment_id_of(purchase.id)
            purchase.grant_access(enrollment_id=enrollment_id)
            lesson = self.get_lesson(purchase.lesson_id)
            return [lesson, _seat_taken(lesson, purchase, enrollment_id)]

        return self._change_purchase(purchase_id, grant)

    # -- compensation ---------------------------------------------------------

    def offer_alternative(
        self, purchase_id: UUID, *, offer_expires_at: datetime
    ) -> PurchaseView:
        return self._change_purchase(
            purchase_id,
            _only(lambda p: p.offer_alternative(offer_expires_at=offer_expires_at)),
        )

    def accept_alternative(
        self, purchase_id: UUID, *, lesson_id: UUID, now: datetime
    ) -> PurchaseView:
        """Only with the student's consent: a NEW seat in `lesson_id`, paid by the
        late payment. The old hold is never revived and no seat is added: a full
        lesson refuses (LessonFullError) and the offer stands."""
        new_id = alternative_id_for(purchase_id, lesson_id)

        def accept(old: Purchase) -> list[Aggregate]:
            if old.alternative_purchase_id == new_id:
                return []  # the same consent again
            lesson = self.get_lesson(lesson_id)
            if lesson.price_cents != old.captured_cents:
                msg = (
                    f"lesson {lesson_id} costs {lesson.price_cents} cents; "
                    f"the payment was {old.captured_cents}"
                )
                raise AlternativePriceError(msg)
            old.accept_alternative(lesson_id=lesson_id, purchase_id=new_id)
            assert old.payment_id is not None  # noqa: S101 - an offer follows a capture
            new = Purchase.reserve(
                purchase_id=new_id,
                lesson_id=lesson_id,
                student_id=old.student_id,
                request_id=f"{ALTERNATIVE_REQUEST}{old.id}",
                price_cents=lesson.price_cents,
                now=now,
                hold=timedelta(minutes=1),  # converted in this same save
            )
            lesson.hold_seat(
                purchase_id=new_id, student_id=old.student_id, until=new.hold_expires_at
            )
            new.record_transfer(
                from_purchase_id=old.id,
                payment_id=old.payment_id,
                amount_cents=old.captured_cents,
            )
            enrollment_id = enrollment_id_of(new_id)
            new.grant_access(enrollment_id=enrollment_id)
            return [lesson, new, _seat_taken(lesson, new, enrollment_id)]

        return self._change_purchase(purchase_id, accept)

    def request_refund(self, purchase_id: UUID, *, now: datetime) -> PurchaseView:
        """The intent, with its stable key, commits before any call to the provider."""

        def refund(purchase: Purchase) -> list[Aggregate]:
            was_holding = purchase.hold_active
            purchase.request_refund(now=now)
            return self._released_hold(purchase) if was_holding else []

        return self._change_purchase(purchase_id, refund)

    def record_refund_accepted(
        self, purchase_id: UUID, *, refund_id: str, next_check_at: datetime
    ) -> None:
        self._change_purchase(
            purchase_id,
            _only(
                lambda p: p.record_refund_accepted(
                    refund_id=refund_id, next_check_at=next_check_at
                )
            ),
        )

    def schedule_refund_retry(
        self,
        purchase_id: UUID,
        *,
        reason: str,
        next_attempt_at: datetime,
        due_at: datetime | None,
    ) -> None:
        self._change_purchase(
            purchase_id,
            _only(
                lambda p: p.schedule_refund_retry(
                    reason=reason, next_attempt_at=next_attempt_at, due_at=due_at
                )
            ),
        )

    def record_refunded(self, purchase_id: UUID, *, refund_id: str) -> PurchaseView:
        return self._change_purchase(
            purchase_id, _only(lambda p: p.record_refunded(refund_id=refund_id))
        )

    def require_review(
        self, purchase_id: UUID, *, reason: str, owner: str
    ) -> PurchaseView:
        return self._change_purchase(
            purchase_id, _only(lambda p: p.require_review(reason=reason, owner=owner))
        )

    def resolve_review(
        self,
        purchase_id: UUID,
        *,
        decision: Resolution,
        operator: str,
        reason: str,
        now: datetime,
    ) -> PurchaseView:
        """An operator settles a purchase in manual review; the seat moves in the
        same save (confirm: the hold, or a free seat, becomes the enrollment;
        refund and cancel: a seat still held goes back), and the saga carries a
        refund on from the recorded intent."""

        def resolve(purchase: Purchase) -> list[Aggregate]:
            was_holding = purchase.hold_active
            enrollment_id = enrollment_id_of(purchase.id)
            purchase.resolve_review(
                decision=decision,
                operator=operator,
                reason=reason,
                now=now,
                enrollment_id=enrollment_id,
            )
            if decision is not Resolution.CONFIRM:
                return self._released_hold(purchase) if was_holding else []
            lesson = self.get_lesson(purchase.lesson_id)
            if not was_holding:  # the hold went: a seat if one is free, else
                # LessonFullError (held and converted in this one save)
                lesson.hold_seat(
                    purchase_id=purchase.id,
                    student_id=purchase.student_id,
                    until=now + timedelta(minutes=1),
                )
            return [lesson, _seat_taken(lesson, purchase, enrollment_id)]

        return self._change_purchase(purchase_id, resolve)

    def bought_seat_of(self, enrollment: Enrollment) -> Purchase | None:
        """The purchase whose money bought this enrollment, or None (a free seat).

        Its id follows from the enrollment's lesson and request (a consented
        alternative's from the purchase whose money it took)."""
        request = enrollment.request_id
        candidates = [purchase_id_for(enrollment.lesson_id, request)]
        if request.startswith(ALTERNATIVE_REQUEST):
            try:
                late = UUID(request.removeprefix(ALTERNATIVE_REQUEST))
            except ValueError:
                late = None
            if late is not None:
                candidates.append(alternative_id_for(late, enrollment.lesson_id))
        for candidate in candidates:
            purchase = self._find_purchase(candidate)
            if purchase is not None and purchase.enrollment_id == enrollment.id:
                return purchase
        return None

    # -- plumbing -------------------------------------------------------------

    def _released_hold(self, purchase: Purchase) -> list[Aggregate]:
        lesson = self.get_lesson(purchase.lesson_id)
        lesson.release_hold(purchase_id=purchase.id)
        return [lesson]

    def _change_purchase(self, purchase_id: UUID, step: Step) -> PurchaseView:
        """get -> step -> save, again on fresh state if a racing save came first."""
        for attempt in range(MAX_ATTEMPTS):
            purchase = self.get_purchase(purchase_id)
            others = step(purchase)
            try:
                self.save(purchase, *others)
            except IntegrityError:
                back_off(attempt)
                continue
            return view_of(purchase)
        raise ContentionError(f"purchase {purchase_id} is too busy, try again")

    def _find_purchase(self, purchase_id: UUID) -> Purchase | None:
        try:
            found: object = self.repository.get(purchase_id)
        except AggregateNotFoundError:
            return None
        return found if isinstance(found, Purchase) else None


def _only(act: Callable[[Purchase], None]) -> Step:
    """A step that changes the purchase alone."""

    def step(purchase: Purchase) -> list[Aggregate]:
        act(purchase)
        return []

    return step


class Purchases:
    """Kept for a caller not yet moved to the methods: `Purchases(app).view(id)`
    is `app.view_purchase(id)`."""

    def __init__(self, app: PurchaseUseCases) -> None:
        self._app = app

    def view(self, purchase_id: UUID) -> PurchaseView:
        return self._app.view_purchase(purchase_id)


__all__ = ["PurchaseView", "Purchases", "Status"]


def _seat_taken(lesson: Lesson, purchase: Purchase, enrollment_id: UUID) -> Enrollment:
    """The purchase's held seat becomes its enrollment, confirmed in the same save."""
    lesson.convert_hold(purchase_id=purchase.id, enrollment_id=enrollment_id)
    return Enrollment.confirm(
        enrollment_id=enrollment_id,
        lesson_id=lesson.id,
        student_id=purchase.student_id,
        request_id=purchase.request_id,
        lesson_starts_at=lesson.starts_at,
    )
