"""Confirmed enrollments in the event store (the truth) beside a read model's count.

When the two agree, the chain (relay, broker, projector) has carried every one. The
read model's column is handed in (the statistics' `confirmed`): adapters read the
projections' tables, they do not import them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from eventsourcing.utils import get_topic

from application.console_reads import ConfirmedTotals
from domain.enrollment import Enrollment


class SqlConfirmedCounts:
    """The confirmed totals (application/console_reads.py:ConfirmedCounts)."""

    def __init__(self, engine: sa.Engine, projected: sa.ColumnElement[Any]) -> None:
        self._engine = engine
        self._projected = projected

    def confirmed_totals(self) -> ConfirmedTotals:
        events = sa.table("club_events", sa.column("topic"))
        with self._engine.connect() as conn:
            stored = conn.execute(
                sa.select(sa.func.count())
                .select_from(events)
                .where(events.c.topic == get_topic(Enrollment.Confirmed))
            ).scalar_one()
            projected = conn.execute(sa.select(sa.func.sum(self._projected))).scalar()
        return ConfirmedTotals(store=int(stored), projection=int(projected or 0))
