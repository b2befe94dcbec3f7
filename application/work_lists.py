"""A person's work, by state: purchases, e-mails and exports waiting on someone.

The states an operator asks for (`club purchases|notifications|exports list`, the
/ops lists, the gauges and `club status` lines), each item with the moment it
entered its state, so the one waiting longest comes first. A purchase's and an
export's item is folded from its events here; the adapters only find them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from application.notification_decision import State
from domain.export import Export, ExportStatus
from domain.purchase import Purchase, Status

PURCHASES, NOTIFICATIONS, EXPORTS = "purchases", "notifications", "exports"
# A refund asked for whose attempt failed (a retry is scheduled): told apart from
# one simply awaiting the provider, though the aggregate says refund_pending.
REFUND_FAILED = "refund_failed"

PURCHASE_STATES = (*(str(s) for s in Status), REFUND_FAILED)
NOTIFICATION_STATES = tuple(str(s) for s in State)
EXPORT_STATES = tuple(str(s) for s in ExportStatus)
STATES = {
    PURCHASES: PURCHASE_STATES,
    NOTIFICATIONS: NOTIFICATION_STATES,
    EXPORTS: EXPORT_STATES,
}
# The states that wait on a person (or on a provider a person may have to chase):
# counted for the gauges and `club status`, each with its oldest item's age.
WATCHED = {
    PURCHASES: (
        str(Status.MANUAL_REVIEW),
        REFUND_FAILED,
        str(Status.REFUND_PENDING),
        str(Status.PAYMENT_CHECKING),
    ),
    NOTIFICATIONS: (
        str(State.UNKNOWN),
        str(State.FAILED),
        str(State.DEAD_LETTERED),
        str(State.SENDING),
    ),
    EXPORTS: (
        str(ExportStatus.FAILED),
        str(ExportStatus.RUNNING),
        str(ExportStatus.PENDING),
    ),
}
# In words, for `club status` and the page: "3 purchases in manual review".
SAID = {
    str(Status.MANUAL_REVIEW): "in manual review",
    REFUND_FAILED: "whose refund failed (retrying)",
    str(Status.REFUND_PENDING): "awaiting a refund",
    str(Status.PAYMENT_CHECKING): "whose payment is unknown (checking)",
    str(State.UNKNOWN): "whose outcome is unknown",
    str(State.FAILED): "failed",
    str(State.DEAD_LETTERED): "dead-lettered",
    str(State.SENDING): "sending",
    str(ExportStatus.RUNNING): "running",
    str(ExportStatus.PENDING): "pending",
}
MAX_LIMIT = 1_000


def check_state(kind: str, state: str) -> str:
    """`state` if `kind` has it; else a ValueError naming the valid ones."""
    valid = STATES[kind]
    if state not in valid:
        msg = f"{state!r} is not a state of {kind}; valid: {', '.join(valid)}"
        raise ValueError(msg)
    return state


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        msg = f"--limit must be between 1 and {MAX_LIMIT}, not {limit}"
        raise ValueError(msg)
    return limit


@attrs.frozen(kw_only=True)
class WorkItem:
    """One item in its state since `since`; `reason`: why it is there (a review's
    reason, a failure's last error), when one was recorded."""

    id: UUID
    state: str
    since: datetime
    reason: str | None = None
    detail: dict[str, str] = attrs.Factory(dict)

    def age_seconds(self, now: datetime) -> float:
        return max((now - self.since).total_seconds(), 0.0)


@attrs.frozen(kw_only=True)
class WorkPage:
    """Oldest in its state first; `total`: how many are in the state."""

    kind: str
    state: str
    items: list[WorkItem]
    total: int
    offset: int = 0


@attrs.frozen(kw_only=True)
class WorkTally:
    kind: str
    state: str
    count: int
    oldest_since: datetime | None  # None: none in the state

    def oldest_age_seconds(self, now: datetime) -> float | None:
        if self.oldest_since is None:
            return None
        return max((now - self.oldest_since).total_seconds(), 0.0)

    @property
    def said(self) -> str:
        return SAID.get(self.state, self.state.replace("_", " "))


def page_of(
    kind: str, state: str, items: Iterable[WorkItem], *, limit: int, offset: int
) -> WorkPage:
    """The items in `state`, oldest first, one page of them."""
    found = sorted((i for i in items if i.state == state), key=lambda i: i.since)
    return WorkPage(
        kind=kind,
        state=state,
        items=found[offset : offset + limit],
        total=len(found),
        offset=offset,
    )


def tallies_of(kind: str, items: Iterable[WorkItem]) -> list[WorkTally]:
    """Each watched state of `kind`: how many, and since when the oldest waits."""
    listed = list(items)
    tallies = []
    for state in WATCHED[kind]:
        since = [i.since for i in listed if i.state == state]
        tallies.append(
            WorkTally(
                kind=kind,
                state=state,
                count=len(since),
                oldest_since=min(since, default=None),
            )
        )
    return tallies


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
