"""The HTTP API (CONTRACT §4): parse, call the application, answer problem details."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
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
from entrypoints.api_docs import ENROLLMENT_LINKS, LESSON_LINKS, merged, problems
from entrypoints.body_limit import BodyLimit
from entrypoints.bootstrap import Container
from entrypoints.deadline import DEFAULT_DEADLINE_S, Deadline
from entrypoints.idempotent import MAX_KEY_LENGTH, run_once
from entrypoints.problems import install_error_handlers, problem
from entrypoints.schemas import (
    EnrollmentIn,
    EnrollmentOut,
    LessonIn,
    LessonOut,
    RosterOut,
    StatisticsOut,
    StudentIdPath,
    StudentIn,
    StudentOut,
)
from projections import rosters, statistics

_KEY_DOC = (
    "Names this attempt: a retry with the same key and body gets the first answer."
)
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_KEY_LENGTH,
        description=f"Optional here. {_KEY_DOC}",
    ),
]
RequiredIdempotencyKey = Annotated[
    str,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_KEY_LENGTH,
        description=f"Required. {_KEY_DOC}",
    ),
]


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

    @api.put(
        "/students/{student_id}",
        operation_id="put_student",
        responses=problems(413, 422, 503),
    )
    def put_student(student_id: StudentIdPath, body: StudentIn) -> StudentOut:
        profile = StudentProfile.create(
            student_id=student_id, email=body.email, name=body.name
        )
        container.students.save(profile)
        return StudentOut(student_id=student_id, email=profile.email, name=profile.name)

    @api.post(
        "/lessons",
        status_code=201,
        operation_id="schedule_lesson",
        response_model=LessonOut,
        responses=merged({201: LESSON_LINKS}, problems(400, 409, 413, 422, 503)),
    )
    def post_lesson(
        body: LessonIn, request: Request, key: IdempotencyKey = None
    ) -> Response:
        def created(lesson: object) -> JSONResponse:
            assert isinstance(lesson, Lesson)  # noqa: S101 - the use case's result
            out = _lesson_out(lesson).model_dump(mode="json")
            return _json(201, out, f"/lessons/{lesson.id}")

        if key is None:
            cmd = ScheduleLesson(lesson_id=uuid4(), **body.model_dump())
            return created(app.get_lesson(app.schedule_lesson(cmd)))
        cmd = ScheduleLesson(lesson_id=lesson_id_for(key), **body.model_dump())
        return run_once(
            request,
            key,
            body.model_dump(mode="json"),
            partial(app.schedule_lesson_once, cmd),
            created,
        )

    @api.get(
        "/lessons/{lesson_id}",
        operation_id="get_lesson",
        responses=problems(404, 422, 503),
    )
    def get_lesson(lesson_id: UUID) -> LessonOut:
        return _lesson_out(app.get_lesson(lesson_id))

    @api.post(
        "/lessons/{lesson_id}/enrollments",
        status_code=201,
        operation_id="enroll_student",
        response_model=EnrollmentOut,
        responses=merged(
            {201: ENROLLMENT_LINKS}, problems(400, 404, 409, 413, 422, 503)
        ),
    )
    def post_enrollment(
        lesson_id: UUID,
        body: EnrollmentIn,
        request: Request,
        key: RequiredIdempotencyKey,
    ) -> Response:
        def created(view: object) -> JSONResponse:
            assert isinstance(view, EnrollmentView)  # noqa: S101 - the result
            out = _enrollment_out(view).model_dump(mode="json")
            return _json(201, out, f"/enrollments/{view.enrollment_id}")

        cmd = EnrollStudent(
            lesson_id=lesson_id,
            student_id=check_student_id(body.student_id),
            request_id=key,
        )
        return run_once(
            request,
            key,
            body.model_dump(mode="json"),
            partial(app.enroll_once, cmd),
            created,
        )

    @api.post(
        "/enrollments/{enrollment_id}/cancel",
        operation_id="cancel_enrollment",
        responses=problems(404, 413, 422, 503),
    )
    def cancel_enrollment(enrollment_id: UUID) -> EnrollmentOut:
        cmd = CancelEnrollment(enrollment_id=enrollment_id)
        return _enrollment_out(app.cancel_enrollment(cmd))

    @api.get(
        "/enrollments/{enrollment_id}",
        operation_id="get_enrollment",
        responses=problems(404, 422, 503),
    )
    def get_enrollment(enrollment_id: UUID) -> EnrollmentOut:
        return _enrollment_out(app.view_enrollment(enrollment_id))

    @api.get(
        "/lessons/{lesson_id}/roster",
        operation_id="get_roster",
        response_model=RosterOut,
        responses=problems(404, 422, 503),
    )
    def get_roster(lesson_id: UUID) -> dict[str, Any]:
        lesson = app.get_lesson(lesson_id)  # 404 for a lesson that does not exist
        with container.engine.begin() as conn:
            last_applied_seq = _last_applied_seq(conn, rosters.NAME)
            students = rosters.read(conn, lesson_id)
        return {
            "lesson_id": str(lesson_id),
            "title": lesson.title,
            "last_applied_seq": last_applied_seq,
            "students": students,
        }

    @api.get(
        "/statistics",
        operation_id="get_statistics",
        response_model=StatisticsOut,
        responses=problems(503),
    )
    def get_statistics() -> dict[str, Any]:
        with container.engine.begin() as conn:
            return {
                "last_applied_seq": _last_applied_seq(conn, statistics.NAME),
                **statistics.read(conn),
            }

    @api.get("/healthz", operation_id="healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/readyz", operation_id="readyz", responses=problems(503))
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


def _last_applied_seq(conn: sa.Connection, consumer: str) -> int:
    """The end of a read model's latest batch, read in the same snapshot as it."""
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
