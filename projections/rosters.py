"""The teacher's roster: who holds a seat in each lesson.

Events of one enrollment may arrive out of order (a republish, a redelivery after a
later event): each row keeps the newest aggregate version it has seen, and a stale
event never overwrites what a newer one said. `apply` never commits; the runner does.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from application.contracts.envelope import Envelope
from application.contracts.events import EnrollmentCancelledV1, EnrollmentConfirmedV2
from application.contracts.mapping import decode

NAME = "rosters"
metadata = sa.MetaData()

entries = sa.Table(
    "roster_entries",
    metadata,
    sa.Column("enrollment_id", pg.UUID(as_uuid=True), primary_key=True),
    sa.Column("lesson_id", pg.UUID(as_uuid=True), nullable=False, index=True),
    sa.Column("student_id", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),  # confirmed | cancelled
    sa.Column("lesson_starts_at", sa.DateTime(timezone=True)),
    sa.Column("enrolled_at", sa.DateTime(timezone=True)),
    sa.Column("version", sa.Integer, nullable=False),  # the enrollment's version
)


def apply(conn: sa.Connection, envelope: Envelope) -> None:
    event = decode(envelope)
    match event:
        case EnrollmentConfirmedV2():
            values: dict[str, Any] = {
                "lesson_id": event.lesson_id,
                "student_id": event.student_id,
                "status": "confirmed",
                "lesson_starts_at": event.lesson_starts_at,
                "enrolled_at": envelope.occurred_at,
            }
        case EnrollmentCancelledV1():
            values = {
                "lesson_id": event.lesson_id,
                "student_id": event.student_id,
                "status": "cancelled",
            }
        case _:
            return
    _newer_wins(conn, event.enrollment_id, envelope.aggregate_version, values)


def _newer_wins(
    conn: sa.Connection, enrollment_id: UUID, version: int, values: dict[str, Any]
) -> None:
    """Merge by version, in any arrival order: for each field the newest event that
    carries it wins, and an older event still fills what only it carries (a
    confirmation arriving after its cancellation adds `enrolled_at`)."""
    stmt = pg.insert(entries).values(
        enrollment_id=enrollment_id, version=version, **values
    )
    new, old = stmt.excluded, entries.c
    newer = old.version < new.version
    merged = {
        k: sa.case(
            (newer, sa.func.coalesce(new[k], old[k])),
            else_=sa.func.coalesce(old[k], new[k]),
        )
        for k in values
    }
    merged["version"] = sa.func.greatest(old.version, new.version)
    conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[entries.c.enrollment_id], set_=merged
        )
    )


def read(conn: sa.Connection, lesson_id: UUID) -> list[dict[str, Any]]:
    rows = conn.execute(
        sa.select(entries)
        .where((entries.c.lesson_id == lesson_id) & (entries.c.status == "confirmed"))
        .order_by(entries.c.enrolled_at, entries.c.enrollment_id)
    ).all()
    return [
        {
            "enrollment_id": str(r.enrollment_id),
            "student_id": r.student_id,
            "enrolled_at": r.enrolled_at.isoformat() if r.enrolled_at else None,
        }
        for r in rows
    ]
