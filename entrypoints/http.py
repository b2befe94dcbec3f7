"""The HTTP API (CONTRACT §4): parse, call the application, answer problem details."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from adapters.nats.streams import connect
from adapters.postgres.tables import consumer_positions
from application.club import EnrollmentView
from application.commands import CancelEnrollment, EnrollStudent, ScheduleLesson
from application.ids import lesson_id_for
from domain.lesson import Lesson
from domain.student import StudentProfile, check_student_id
from entrypoints.body_limit import BodyLimit
from entrypoints.bootstrap import Container
from entrypoints.deadline import DEFAULT_DEADLINE_S, Deadline
from entrypoints.idempotent import run_once
from entrypoints.problems import install_error_handlers, problem
from entrypoints.schemas import (
    EnrollmentIn,
    EnrollmentOut,
    LessonIn,
    LessonOut,
    StudentIn,
    StudentOut,
)
from projections import rosters, statistics

IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key")]


def create_app(
    container: Container,
    nats_url: str | None = None,
    *,
    deadline_seconds: float = DEFAULT_DEADLINE_S,
) -> FastAPI:
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if nats_url:
            state["nats"] = await connect(nats_url, name="club-api")
        yield
        if "nats" in state:
            await state["nats"].close()

    api = FastAPI(title="Club", version="0.1.0", lifespan=lifespan)
    install_error_handlers(api)
    app = container.app

    @api.put("/students/{student_id}")
    def put_student(student_id: str, body: StudentIn) -> StudentOut:
        profile = StudentProfile.create(
            student_id=student_id, email=body.email, name=body.name
        )
        container.students.save(profile)
        return StudentOut(student_id=student_id, email=profile.email, name=profile.name)

    @api.post("/lessons", status_code=201)
    def post_lesson(
        body: LessonIn, request: Request, key: IdempotencyKey = None
    ) -> Response:
        def run() -> JSONResponse:
            lesson_id = lesson_id_for(key) if key else uuid4()
            app.schedule_lesson(
                ScheduleLesson(lesson_id=lesson_id, **body.model_dump())
            )
            out = _lesson_out(app.get_lesson(lesson_id))
            return _json(201, out.model_dump(mode="json"), f"/lessons/{lesson_id}")

        if key is None:
            return run()
        return run_once(container, request, key, body.model_dump(mode="json"), run)

    @api.get("/lessons/{lesson_id}")
    def get_lesson(lesson_id: UUID) -> LessonOut:
        return _lesson_out(app.get_lesson(lesson_id))

    @api.post("/lessons/{lesson_id}/enrollments", status_code=201)
    def post_enrollment(
        lesson_id: UUID,
        body: EnrollmentIn,
        request: Request,
        key: IdempotencyKey = None,
    ) -> Response:
        if key is None:
            return problem(
                400,
                "idempotency-key-missing",
                "Idempotency-Key required",
                "send a unique Idempotency-Key header; reuse it to retry this request",
            )

        def run() -> JSONResponse:
            cmd = EnrollStudent(
                lesson_id=lesson_id,
                student_id=check_student_id(body.student_id),
                request_id=key,
            )
            view = app.enroll(cmd)
            out = _enrollment_out(view).model_dump(mode="json")
            return _json(201, out, f"/enrollments/{view.enrollment_id}")

        return run_once(container, request, key, body.model_dump(mode="json"), run)

    @api.post("/enrollments/{enrollment_id}/cancel")
    def cancel_enrollment(enrollment_id: UUID) -> EnrollmentOut:
        cmd = CancelEnrollment(enrollment_id=enrollment_id)
        return _enrollment_out(app.cancel_enrollment(cmd))

    @api.get("/enrollments/{enrollment_id}")
    def get_enrollment(enrollment_id: UUID) -> EnrollmentOut:
        return _enrollment_out(app.view_enrollment(enrollment_id))

    @api.get("/lessons/{lesson_id}/roster")
    def get_roster(lesson_id: UUID) -> dict[str, Any]:
        lesson = app.get_lesson(lesson_id)  # 404 for a lesson that does not exist
        with container.engine.begin() as conn:
            position = _position(conn, rosters.NAME)
            students = rosters.read(conn, lesson_id)
        return {
            "lesson_id": str(lesson_id),
            "title": lesson.title,
            "position": position,
            "students": students,
        }

    @api.get("/statistics")
    def get_statistics() -> dict[str, Any]:
        with container.engine.begin() as conn:
            return {
                "position": _position(conn, statistics.NAME),
                **statistics.read(conn),
            }

    @api.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/readyz")
    async def readyz() -> Response:
        checks = {
            "database": await asyncio.to_thread(_database_ready, container),
            "nats": await _nats_ready(state.get("nats")),
        }
        if all(checks.values()):
            return JSONResponse({"status": "ready", "checks": checks})
        return problem(
            503,
            "not-ready",
            "Not ready",
            headers={"Retry-After": "1"},
            checks=checks,
        )

    @api.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return Deadline(BodyLimit(api), deadline_seconds)  # type: ignore[return-value]


def _position(conn: sa.Connection, consumer: str) -> int:
    """The stream sequence a read model reflects, read in the same snapshot."""
    conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    position = conn.execute(
        sa.select(consumer_positions.c.stream_seq).where(
            consumer_positions.c.consumer == consumer
        )
    ).scalar()
    return int(position or 0)


def _enrollment_out(view: EnrollmentView) -> EnrollmentOut:
    return EnrollmentOut(
        enrollment_id=view.enrollment_id,
        lesson_id=view.lesson_id,
        student_id=view.student_id,
        status=view.status,
    )


def _lesson_out(lesson: Lesson) -> LessonOut:
    return LessonOut(
        lesson_id=lesson.id,
        title=lesson.title,
        capacity=lesson.capacity,
        seats_taken=lesson.seats_taken,
        seats_held=0,  # holds come with paid intensives
        starts_at=lesson.starts_at,
        price_cents=lesson.price_cents,
        version=lesson.version,
    )


def _json(status: int, body: Any, location: str | None = None) -> JSONResponse:
    headers = {"Location": location} if location else None
    return JSONResponse(body, status_code=status, headers=headers)


def _database_ready(container: Container) -> bool:
    try:
        with container.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError:
        return False
    return True


async def _nats_ready(nc: Any) -> bool:
    if nc is None or not nc.is_connected:
        return False
    try:
        await asyncio.wait_for(nc.jetstream().account_info(), 2)
    except Exception:  # any failure means "not ready", never a 500
        return False
    return True
