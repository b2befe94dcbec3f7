"""Confirmed enrollments in the event store (the truth) beside the statistics' count.

When the two agree, the chain (relay, broker, projector) has carried every one;
a benchmark waits on it, a fault test compares them after the dust settles.
"""

from __future__ import annotations

import attrs
import sqlalchemy as sa
from eventsourcing.utils import get_topic

from domain.enrollment import Enrollment
from entrypoints.config.container import Container
from projections import statistics


@attrs.frozen(kw_only=True)
class ConfirmedTotals:
    store: int
    projection: int

    @property
    def caught_up(self) -> bool:
        return self.projection >= self.store


def confirmed_totals(container: Container) -> ConfirmedTotals:
    events = sa.table("club_events", sa.column("topic"))
    with container.engine.connect() as conn:
        stored = conn.execute(
            sa.select(sa.func.count())
            .select_from(events)
            .where(events.c.topic == get_topic(Enrollment.Confirmed))
        ).scalar_one()
        projected = conn.execute(
            sa.select(sa.func.sum(statistics.lessons.c.confirmed))
        ).scalar()
    return ConfirmedTotals(store=int(stored), projection=int(projected or 0))
