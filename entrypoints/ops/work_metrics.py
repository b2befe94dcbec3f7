"""The work-by-state gauges, set from the chain's status at each scrape (beside the
chain's, in entrypoints/ops/status_metrics.py): `club status`, /ops and /metrics
read the same tallies."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from prometheus_client import Gauge

from adapters.metrics import (
    EXPORTS,
    MANUAL_REVIEWS_WAITING,
    NOTIFICATIONS,
    PURCHASES,
    WORK_OLDEST_AGE,
)
from application.work_lists import WorkTally

_COUNTS: dict[str, tuple[Gauge, str]] = {
    "purchases": (PURCHASES, "status"),
    "notifications": (NOTIFICATIONS, "state"),
    "exports": (EXPORTS, "status"),
}
MANUAL_REVIEW = "manual_review"


def set_work_gauges(tallies: Iterable[WorkTally], now: datetime) -> None:
    for tally in tallies:
        gauge, label = _COUNTS[tally.kind]
        gauge.labels(**{label: tally.state}).set(tally.count)
        WORK_OLDEST_AGE.labels(kind=tally.kind, state=tally.state).set(
            tally.oldest_age_seconds(now) or 0.0
        )
        if tally.kind == "purchases" and tally.state == MANUAL_REVIEW:
            MANUAL_REVIEWS_WAITING.set(tally.count)
