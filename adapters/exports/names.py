"""Students' names for a roster, read in one query (a roster may hold 10,000)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from adapters.postgres.tables import students


class SqlStudentNames:
    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def names(self, student_ids: Sequence[str]) -> dict[str, str]:
        if not student_ids:
            return {}
        query = sa.select(students.c.student_id, students.c.name).where(
            students.c.student_id.in_(sorted(set(student_ids)))
        )
        with self._engine.connect() as conn:
            return {row.student_id: row.name for row in conn.execute(query)}
