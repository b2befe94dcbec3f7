"""The notifier's purchase lookup (`PurchaseLookup`) on the Club event store."""

from __future__ import annotations

from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.club import ClubApplication
from application.ports import PurchaseLookup
from application.purchase_emails import PurchaseFacts
from application.purchases import (
    ALTERNATIVE_REQUEST,
    alternative_id_for,
    enrollment_id_of,
    purchase_id_for,
)
from domain.enrollment import Enrollment


def purchase_facts_from(app: ClubApplication) -> PurchaseLookup:
    """The notifier's purchase lookup on the Club event store."""
    return _EventStorePurchases(app)


class _EventStorePurchases:
    def __init__(self, app: ClubApplication) -> None:
        self._app = app

    def facts(self, purchase_id: UUID) -> PurchaseFacts:
        purchase = self._app.get_purchase(purchase_id)
        return PurchaseFacts(
            student_id=purchase.student_id,
            lesson_id=purchase.lesson_id,
            seat_id=enrollment_id_of(purchase.id),
            refund_cents=purchase.refund_cents,
        )

    def bought(self, enrollment_id: UUID) -> bool:
        # A purchase's enrollment id is derived from the purchase's, which is
        # derived from the lesson and the request: derive them again and compare.
        try:
            found: object = self._app.repository.get(enrollment_id)
        except AggregateNotFoundError:
            return False
        if not isinstance(found, Enrollment):
            return False
        request = found.request_id
        candidates = [purchase_id_for(found.lesson_id, request)]
        if request.startswith(ALTERNATIVE_REQUEST):
            try:
                old = UUID(request.removeprefix(ALTERNATIVE_REQUEST))
            except ValueError:
                return False
            candidates.append(alternative_id_for(old, found.lesson_id))
        return any(enrollment_id_of(c) == enrollment_id for c in candidates)
