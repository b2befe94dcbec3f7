"""A person's work, by state: purchases, e-mails and exports waiting on someone.

The states an operator asks for (`club purchases|notifications|exports list`, the
/ops lists, the gauges and `club status` lines), each item with the moment it
entered its state, so the one waiting longest comes first. A purchase's and an
export's item is folded from its events (application/work_history.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

import attrs

from application.notification_decision import State
from domain.export import ExportStatus
from domain.purchase import Status

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
