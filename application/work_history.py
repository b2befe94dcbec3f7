"""A purchase's or an export's history, folded into its work item: its state, the
moment it entered it, and why. Which histories to fold is read from their last
event: an event that always sets a status tells it; one that may keep the status
it found needs the fold (docs/decisions/2026-12-02-work-lists-from-the-event-
store.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from application.work_lists import EXPORTS, REFUND_FAILED, WorkItem
from domain.export import Export, ExportStatus
from domain.purchase import Purchase, Status

# -- which stored histories to fold ------------------------------------------

# The events that always leave a purchase in one status: a history ending in one
# of them is in that status. The others may leave it as it was: a history ending
# in one of those must be folded to know.
PURCHASE_SETS: dict[type[Any], Status] = {
    Purchase.Reserved: Status.RESERVED,
    Purchase.PaymentRequested: Status.PAYMENT_PENDING,
    Purchase.PaymentOutcomeUnknown: Status.PAYMENT_CHECKING,
    Purchase.PaymentCaptured: Status.CAPTURED,
    Purchase.PaymentTransferred: Status.CAPTURED,
    Purchase.HoldExpired: Status.EXPIRED,
    Purchase.AccessGranted: Status.CONFIRMED,
    Purchase.AlternativeOffered: Status.ALTERNATIVE_OFFERED,
    Purchase.AlternativeAccepted: Status.ALTERNATIVE_ACCEPTED,
    Purchase.RefundRequested: Status.REFUND_PENDING,
    Purchase.Refunded: Status.REFUNDED,
    Purchase.ManualReviewRequired: Status.MANUAL_REVIEW,
}
PURCHASE_MAY_KEEP: tuple[type[Any], ...] = (
    Purchase.PaymentCheckScheduled,
    Purchase.PaymentFoundPending,
    Purchase.PaymentNotTaken,
    Purchase.PaymentDeclined,
    Purchase.RefundAccepted,
    Purchase.RefundRetryScheduled,
    Purchase.ReviewResolved,  # refund, confirm or cancel: each leaves its own
)
EXPORT_SETS: dict[type[Any], ExportStatus] = {
    Export.Requested: ExportStatus.PENDING,
    Export.Started: ExportStatus.RUNNING,
    Export.Succeeded: ExportStatus.SUCCEEDED,
    Export.Failed: ExportStatus.FAILED,
}


def last_events_of(kind: str, states: Iterable[str]) -> tuple[type[Any], ...]:
    """The event classes a history in one of `states` can end with."""
    if kind == EXPORTS:
        return tuple(c for c, s in EXPORT_SETS.items() if str(s) in set(states))
    wanted = {str(Status.REFUND_PENDING) if s == REFUND_FAILED else s for s in states}
    sets = tuple(c for c, s in PURCHASE_SETS.items() if str(s) in wanted)
    return (*sets, *PURCHASE_MAY_KEEP)


# -- folding an aggregate's events into its item -----------------------------

# The reasons a purchase's events record, by the event that records one.
_REASONED = (
    Purchase.ManualReviewRequired,
    Purchase.PaymentOutcomeUnknown,
    Purchase.PaymentCheckScheduled,
    Purchase.RefundRetryScheduled,
    Purchase.PaymentNotTaken,
    Purchase.PaymentDeclined,
)


def purchase_item(events: Sequence[Any]) -> WorkItem:
    """A purchase's item: its state, since the event that put it there, and the
    last reason recorded (a review's, a failed refund's, an unknown payment's)."""
    purchase: Purchase | None = None
    since: datetime | None = None
    state = ""
    reason: str | None = None
    for event in events:
        purchase = event.mutate(purchase)
        assert purchase is not None  # noqa: S101 - a stored history starts with one
        now_state = _purchase_state(purchase)
        if now_state != state:
            state, since = now_state, event.timestamp
        if isinstance(event, _REASONED):
            reason = event.reason
    if purchase is None or since is None:
        raise ValueError("a purchase's item needs its events")
    if purchase.status is Status.MANUAL_REVIEW:
        reason = purchase.review_reason  # the first reason stands
    return WorkItem(
        id=purchase.id,
        state=state,
        since=since,
        reason=reason,
        detail={
            "lesson_id": str(purchase.lesson_id),
            "student_id": purchase.student_id,
            "price_cents": str(purchase.price_cents),
            "owner": _owner(purchase),
        },
    )


def _purchase_state(purchase: Purchase) -> str:
    if purchase.status is Status.REFUND_PENDING and purchase.refund_attempts:
        return REFUND_FAILED
    return str(purchase.status)


def _owner(purchase: Purchase) -> str:
    if purchase.status is Status.MANUAL_REVIEW:
        return purchase.review_owner or ""
    if purchase.status is Status.PAYMENT_CHECKING:
        return purchase.check_owner or ""
    return ""


def export_item(events: Sequence[Any]) -> WorkItem:
    """An export's item: its status, since the event that set it; a failure's
    reason."""
    export: Export | None = None
    since: datetime | None = None
    state = ""
    for event in events:
        export = event.mutate(export)
        assert export is not None  # noqa: S101 - a stored history starts with one
        if str(export.status) != state or isinstance(event, Export.Started):
            state, since = str(export.status), event.timestamp
    if export is None or since is None:
        raise ValueError("an export's item needs its events")
    return WorkItem(
        id=export.id,
        state=state,
        since=since,
        reason=export.error,
        detail={
            "lesson_id": str(export.lesson_id),
            "attempts": str(export.attempts),
        },
    )
