"""The statistics read model: enrollments per lesson and in total.

`apply` never commits: the consumer runner writes the inbox rows, this effect and
the stream position in one transaction, so a redelivered event changes nothing.
A batch becomes one statement: counts are summed per lesson first (they commute,
so arrival order does not matter).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from application.contracts.envelope import Envelope
from application.contracts.events import (
    EnrollmentCancelledV1,
    EnrollmentConfirmedV2,
    LessonScheduledV1,
)
from application.contracts.mapping import decode
from projections.arrays import as_arrays, insert_rows
from projections.positions import last_applied_seq, same_snapshot

NAME = "statistics"
metadata = sa.MetaData()

lessons = sa.Table(
    "statistics_lessons",
    metadata,
    sa.Column("lesson_id", pg.UUID(as_uuid=True), primary_key=True),
    sa.Column("title", sa.Text),
    sa.Column("capacity", sa.Integer),
    sa.Column("confirmed", sa.Integer, nullable=False, server_default="0"),
    sa.Column("cancelled", sa.Integer, nullable=False, server_default="0"),
)


def apply(conn: sa.Connection, envelopes: Sequence[Envelope]) -> None:
    scheduled: dict[UUID, LessonScheduledV1] = {}
    confirmed: Counter[UUID] = Counter()
    cancelled: Counter[UUID] = Counter()
    for envelope in envelopes:
        match decode(envelope):
            case LessonScheduledV1() as event:
                scheduled[event.lesson_id] = event
            case EnrollmentConfirmedV2(lesson_id=lesson_id):
                confirmed[lesson_id] += 1
            case EnrollmentCancelledV1(lesson_id=lesson_id):
                cancelled[lesson_id] += 1
    touched = sorted(scheduled.keys() | confirmed.keys() | cancelled.keys())
    if not touched:
        return
    rows = [
        {
            "lesson_id": lesson_id,
            "title": scheduled[lesson_id].title if lesson_id in scheduled else None,
            "capacity": scheduled[lesson_id].capacity
            if lesson_id in scheduled
            else None,
            "confirmed": confirmed[lesson_id],
            "cancelled": cancelled[lesson_id],
        }
        for lesson_id in touched
    ]
    conn.execute(_UPSERT, as_arrays(rows, lessons.columns))


_insert = insert_rows(lessons)
_UPSERT = _insert.on_conflict_do_update(
    index_elements=[lessons.c.lesson_id],
    set_={
        "title": sa.func.coalesce(_insert.excluded.title, lessons.c.title),
        "capacity": sa.func.coalesce(_insert.excluded.capacity, lessons.c.capacity),
        "confirmed": lessons.c.confirmed + _insert.excluded.confirmed,
        "cancelled": lessons.c.cancelled + _insert.excluded.cancelled,
    },
)


def read(
    conn: sa.Connection, *, limit: int = 100, after: UUID | None = None
) -> dict[str, Any]:
    """Totals over every lesson, one page of per-lesson counts (`limit` lessons by
    id, those after `after`), and the stream sequence they reflect."""
    same_snapshot(conn)
    return {
        "last_applied_seq": last_applied_seq(conn, NAME),
        "totals": totals(conn),
        "lessons": page(conn, limit=limit, after=after),
    }


def totals(conn: sa.Connection) -> dict[str, int]:
    c = lessons.c
    row = conn.execute(
        sa.select(
            sa.func.count(c.capacity),
            sa.func.coalesce(sa.func.sum(c.confirmed), 0),
            sa.func.coalesce(sa.func.sum(c.cancelled), 0),
        )
    ).one()
    counted, confirmed, cancelled = (int(v) for v in row)
    return {
        "lessons": counted,
        "enrollments_confirmed": confirmed,
        "enrollments_cancelled": cancelled,
        "active_enrollments": confirmed - cancelled,
    }


def page(
    conn: sa.Connection, *, limit: int, after: UUID | None
) -> list[dict[str, Any]]:
    query = sa.select(lessons).order_by(lessons.c.lesson_id).limit(limit)
    if after is not None:
        query = query.where(lessons.c.lesson_id > after)
    rows = conn.execute(query).all()
    return [
        {
            "lesson_id": str(r.lesson_id),
            "title": r.title,
            "capacity": r.capacity,
            "enrollments_confirmed": r.confirmed,
            "enrollments_cancelled": r.cancelled,
            "active_enrollments": r.confirmed - r.cancelled,
        }
        for r in rows
    ]
