"""The peer a user would write instead of Club: the same enrollment, the plain way.

A FastAPI endpoint that locks the lesson's row (SELECT ... FOR UPDATE), counts its
enrollments, inserts one and commits: no event store, no outbox, no idempotency, no
student lookup. The bench serves it with the same server as Club's API, on the same
PostgreSQL (a database of its own), and drives it with the same clients; Club's
rate must be at least 0.8 of it (the reliability must cost little).

`python -m uvicorn bench.peer_plain:create_app --factory` with PEER_DATABASE_URL set.
"""

from __future__ import annotations

import os
from typing import Any
from uuid import UUID, uuid4

import psycopg
from fastapi import FastAPI, HTTPException
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

SCHEMA = """
CREATE TABLE IF NOT EXISTS peer_lessons (
    lesson_id uuid PRIMARY KEY,
    capacity integer NOT NULL
);
CREATE TABLE IF NOT EXISTS peer_enrollments (
    enrollment_id uuid PRIMARY KEY,
    lesson_id uuid NOT NULL REFERENCES peer_lessons,
    student_id text NOT NULL,
    UNIQUE (lesson_id, student_id)
);
"""


class EnrollmentIn(BaseModel):
    student_id: str


class EnrollmentOut(BaseModel):
    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    status: str


def migrate(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(SCHEMA)


def new_lessons(database_url: str, capacity: int, count: int) -> list[UUID]:
    lessons = [uuid4() for _ in range(count)]
    with psycopg.connect(database_url) as conn:
        conn.cursor().executemany(
            "INSERT INTO peer_lessons (lesson_id, capacity) VALUES (%s, %s)",
            [(lesson, capacity) for lesson in lessons],
        )
    return lessons


def create_app() -> FastAPI:
    database_url = os.environ["PEER_DATABASE_URL"]
    migrate(database_url)
    # The same pool size as Club's API (bootstrap.container_options: 20).
    pool = ConnectionPool(database_url, min_size=4, max_size=20, open=True)
    app = FastAPI()

    @app.get("/readyz")
    def ready() -> dict[str, str]:
        return {"status": "ready"}

    @app.post("/lessons/{lesson_id}/enrollments", status_code=201)
    def enroll(lesson_id: UUID, body: EnrollmentIn) -> EnrollmentOut:
        enrollment_id = uuid4()
        with pool.connection() as conn, conn.transaction():
            lesson: Any = conn.execute(
                "SELECT capacity FROM peer_lessons WHERE lesson_id = %s FOR UPDATE",
                (lesson_id,),
            ).fetchone()
            if lesson is None:
                raise HTTPException(404, "no such lesson")
            taken: Any = conn.execute(
                "SELECT count(*) FROM peer_enrollments WHERE lesson_id = %s",
                (lesson_id,),
            ).fetchone()
            if taken[0] >= lesson[0]:
                raise HTTPException(409, "lesson full")
            inserted = conn.execute(
                "INSERT INTO peer_enrollments (enrollment_id, lesson_id, student_id) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (enrollment_id, lesson_id, body.student_id),
            )
            if inserted.rowcount == 0:
                raise HTTPException(409, "already enrolled")
        return EnrollmentOut(
            enrollment_id=enrollment_id,
            lesson_id=lesson_id,
            student_id=body.student_id,
            status="confirmed",
        )

    return app
