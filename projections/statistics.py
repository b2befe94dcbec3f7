"""The statistics read model: enrollments per lesson and in total.

`apply` never commits: the consumer runner writes the inbox row, this effect and
the stream position in one transaction, so a redelivered event changes nothing.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import UUID, insert

from application.contracts.envelope import Envelope
from application.contracts.events import (
    EnrollmentCancelledV1,
    EnrollmentConfirmedV2,
    LessonScheduledV1,
)
from application.contracts.mapping import decode

NAME = "statistics"
metadata = sa.MetaData()

lessons = sa.Table(
    "statistics_lessons",
    metadata,
    sa.Column("lesson_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("title", sa.Text),
    sa.Column("capacity", sa.Integer),
    sa.Column("confirmed", sa.Integer, nullable=False, server_default="0"),
    sa.Column("cancelled", sa.Integer, nullable=False, server_default="0"),
)


def apply(conn: sa.Connection, envelope: Envelope) -> None:
    event = decode(envelope)
    match event:
        case LessonScheduledV1():
            values: dict[str, Any] = {"title": event.title, "capacity": event.capacity}
            _upsert(conn, event.lesson_id, values, values)
        case EnrollmentConfirmedV2():
            _bump(conn, event.lesson_id, "confirmed")
        case EnrollmentCancelledV1():
            _bump(conn, event.lesson_id, "cancelled")


def _bump(conn: sa.Connection, lesson_id: Any, counter: str) -> None:
    column = lessons.c[counter]
    _upsert(conn, lesson_id, {counter: 1}, {counter: column + 1})


def _upsert(
    conn: sa.Connection,
    lesson_id: Any,
    insert_values: dict[str, Any],
    update: dict[str, Any],
) -> None:
    stmt = insert(lessons).values(lesson_id=lesson_id, **insert_values)
    conn.execute(
        stmt.on_conflict_do_update(index_elements=[lessons.c.lesson_id], set_=update)
    )


def read(conn: sa.Connection) -> dict[str, Any]:
    rows = conn.execute(sa.select(lessons).order_by(lessons.c.lesson_id)).all()
    per_lesson = [
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
    totals = {
        "lessons": sum(1 for r in rows if r.capacity is not None),
        "enrollments_confirmed": sum(r.confirmed for r in rows),
        "enrollments_cancelled": sum(r.cancelled for r in rows),
    }
    totals["active_enrollments"] = (
        totals["enrollments_confirmed"] - totals["enrollments_cancelled"]
    )
    return {"totals": totals, "lessons": per_lesson}
