"""Student profiles in a plain table: updated in place, erasable on request."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import students
from domain.student import StudentProfile

# Built once: SQLAlchemy caches a compiled statement by the statement object.
_PROFILE = sa.select(students.c.email, students.c.name).where(
    students.c.student_id == sa.bindparam("wanted")
)


class SqlStudentDirectory:
    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        # A lookup is one statement: no BEGIN and ROLLBACK round trips around it.
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")

    def save(self, profile: StudentProfile) -> None:
        values = {"email": profile.email, "name": profile.name}
        stmt = insert(students).values(student_id=profile.student_id, **values)
        stmt = stmt.on_conflict_do_update(
            index_elements=[students.c.student_id],
            set_={**values, "updated_at": sa.func.now()},
        )
        with self._engine.begin() as conn:
            conn.execute(stmt)

    def get(self, student_id: str) -> StudentProfile | None:
        with self._reader.connect() as conn:
            row = conn.execute(_PROFILE, {"wanted": student_id}).one_or_none()
        if row is None:
            return None
        return StudentProfile(student_id=student_id, email=row.email, name=row.name)
