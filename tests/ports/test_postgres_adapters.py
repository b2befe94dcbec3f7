"""The PostgreSQL adapters keep the ports' contracts (each test on a clean table)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from adapters.postgres.answers import SqlAnswerStore
from adapters.postgres.students import SqlStudentDirectory
from adapters.postgres.tables import request_answers, students
from tests.ports.answer_store import AnswerStoreContract
from tests.ports.student_directory import StudentDirectoryContract


def _emptied(engine: sa.Engine, table: sa.Table) -> sa.Engine:
    with engine.begin() as conn:
        conn.execute(sa.delete(table))
    return engine


class TestSqlStudentDirectory(StudentDirectoryContract):
    @pytest.fixture
    def directory(self, container) -> SqlStudentDirectory:
        return SqlStudentDirectory(_emptied(container.engine, students))


class TestSqlAnswerStore(AnswerStoreContract):
    @pytest.fixture
    def store(self, container) -> SqlAnswerStore:
        return SqlAnswerStore(_emptied(container.engine, request_answers))
