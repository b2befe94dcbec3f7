"""The roster answers whatever start a stored row carries."""

from __future__ import annotations

from uuid import uuid4

import sqlalchemy as sa

from projections import rosters


def test_a_start_python_cannot_load_does_not_break_the_roster(container) -> None:
    lesson_id, enrollment_id = uuid4(), uuid4()
    with container.engine.begin() as conn:
        rosters.metadata.create_all(conn)
        # Stored before the API bounded starts_at: 9999-12-31T23:00-05:00.
        conn.execute(
            sa.text(
                "INSERT INTO roster_entries (enrollment_id, lesson_id, student_id,"
                " status, lesson_starts_at, enrolled_at, version) VALUES (:e, :l,"
                " 'ann', 'confirmed', '10000-01-01 04:00:00+00', now(), 1)"
            ),
            {"e": enrollment_id, "l": lesson_id},
        )
    with container.engine.connect() as conn:
        [entry] = rosters.read(conn, lesson_id)["students"]
    assert entry["enrollment_id"] == str(enrollment_id)
    assert entry["student_id"] == "ann"
