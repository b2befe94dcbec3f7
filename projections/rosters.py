"""The teacher's roster: who holds a seat in each lesson.

Events of one enrollment may arrive out of order (a republish, a redelivery after a
later event). Each row keeps the newest aggregate version it has seen, and rows merge
field by field: the newest event that carries a field wins, and an older event still
fills what only it carries (a confirmation arriving after its cancellation adds
`enrolled_at`). The merge is the same in Python (within a batch) and in SQL (against
the stored row), so any arrival order gives the same roster. `apply` never commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from application.contracts.envelope import Envelope
from application.contracts.events import EnrollmentCancelledV1, EnrollmentConfirmedV2
from application.contracts.mapping import decode
from projections.arrays import as_arrays, insert_rows
from projections.positions import last_applied_seq, same_snapshot

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
FIELDS = ("lesson_id", "student_id", "status", "lesson_starts_at", "enrolled_at")


def apply(conn: sa.Connection, envelopes: Sequence[Envelope]) -> None:
    merged: dict[UUID, dict[str, Any]] = {}
    for envelope in sorted(envelopes, key=lambda e: e.aggregate_version):
        change = _change(envelope)
        if change is not None:
            row = merged.setdefault(change["enrollment_id"], dict.fromkeys(FIELDS))
            row.update({k: v for k, v in change.items() if v is not None})
    if not merged:
        return
    rows = [{"enrollment_id": k, **row} for k, row in merged.items()]
    conn.execute(_UPSERT, as_arrays(rows, entries.columns))


def _merge() -> pg.Insert:
    """Newest version wins field by field; an older event still fills the gaps."""
    stmt = insert_rows(entries)
    new, old = stmt.excluded, entries.c
    newer = old.version < new.version
    set_: dict[str, Any] = {
        k: sa.case(
            (newer, sa.func.coalesce(new[k], old[k])),
            else_=sa.func.coalesce(old[k], new[k]),
        )
        for k in FIELDS
    }
    set_["version"] = sa.func.greatest(old.version, new.version)
    return stmt.on_conflict_do_update(index_elements=[old.enrollment_id], set_=set_)


_UPSERT = _merge()


def _change(envelope: Envelope) -> dict[str, Any] | None:
    event = decode(envelope)
    match event:
        case EnrollmentConfirmedV2():
            return {
                "enrollment_id": event.enrollment_id,
                "version": envelope.aggregate_version,
                "lesson_id": event.lesson_id,
                "student_id": event.student_id,
                "status": "confirmed",
                "lesson_starts_at": event.lesson_starts_at,
                "enrolled_at": envelope.occurred_at,
            }
        case EnrollmentCancelledV1():
            return {
                "enrollment_id": event.enrollment_id,
                "version": envelope.aggregate_version,
                "lesson_id": event.lesson_id,
                "student_id": event.student_id,
                "status": "cancelled",
            }
    return None


# Where a page of a roster ends: the last entry's (enrolled_at, enrollment_id).
Cursor = tuple[datetime, UUID]
NEVER = datetime(1970, 1, 1, tzinfo=UTC)  # orders an entry with no time first


def read(
    conn: sa.Connection,
    lesson_id: UUID,
    *,
    limit: int = 100,
    after: Cursor | None = None,
) -> dict[str, Any]:
    """A page of the lesson's confirmed students (`limit`, in the order they
    enrolled, those after `after`) and the stream sequence they reflect."""
    same_snapshot(conn)
    return {
        "last_applied_seq": last_applied_seq(conn, NAME),
        "students": students(conn, lesson_id, limit=limit, after=after),
    }


def students(
    conn: sa.Connection,
    lesson_id: UUID,
    *,
    limit: int = 100,
    after: Cursor | None = None,
) -> list[dict[str, Any]]:
    # Only the columns answered: a `lesson_starts_at` stored before the API bounded
    # it (year 10000 in UTC) cannot be loaded into Python, and must not make the
    # roster fail for good.
    c = entries.c
    enrolled = sa.func.coalesce(c.enrolled_at, NEVER)
    query = (
        sa.select(c.enrollment_id, c.student_id, c.enrolled_at)
        .where((c.lesson_id == lesson_id) & (c.status == "confirmed"))
        .order_by(enrolled, c.enrollment_id)
        .limit(limit)
    )
    if after is not None:
        query = query.where(sa.tuple_(enrolled, c.enrollment_id) > sa.tuple_(*after))
    rows = conn.execute(query).all()
    return [
        {
            "enrollment_id": str(r.enrollment_id),
            "student_id": r.student_id,
            "enrolled_at": r.enrolled_at.isoformat() if r.enrolled_at else None,
        }
        for r in rows
    ]
