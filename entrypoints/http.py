"""The HTTP API (CONTRACT §4): parse, call the application, answer problem details."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any
from uuid import UUID, uuid4

import sqlalchemy as sa
import structlog
from fastapi import FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from adapters.crash import crash_point
from adapters.nats.streams import connect
from adapters.postgres.idempotency import InFlight, Mismatch, Replay, Started
from adapters.postgres.tables import consumer_positions
from application.commands import CancelEnrollment, EnrollStudent, ScheduleLesson
from application.ids import lesson_id_for
from domain.lesson import Lesson
from domain.student import StudentProfile, check_student_id
from entrypoints.body_limit import BodyLimit
from entrypoints.bootstrap import Container
from entrypoints.problems import KNOWN_ERRORS, problem, problem_for
from entrypoints.schemas import (
    EnrollmentIn,
    EnrollmentOut,
    LessonIn,
    LessonOut,
    StudentIn,
    StudentOut,
)
from projections import rosters, statistics

log = structlog.get_logger()
MAX_KEY_LENGTH = 255
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key")]


def create_app(container: Container, nats_url: str | None = None) -> FastAPI:
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if nats_url:
            state["nats"] = await connect(nats_url, name="club-api")
        yield
        if "nats" in state:
            await state["nats"].close()

    api = FastAPI(title="Club", version="0.1.0", lifespan=lifespan)
    _install_error_handlers(api)
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
        return _idempotent(container, request, key, body.model_dump(mode="json"), run)

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
            out = EnrollmentOut(
                enrollment_id=view.enrollment_id,
                lesson_id=view.lesson_id,
                student_id=view.student_id,
                status=view.status,
            )
            location = f"/enrollments/{view.enrollment_id}"
            return _json(201, out.model_dump(mode="json"), location)

        return _idempotent(container, request, key, body.model_dump(mode="json"), run)

    @api.post("/enrollments/{enrollment_id}/cancel")
    def cancel_enrollment(enrollment_id: UUID) -> EnrollmentOut:
        view = app.cancel_enrollment(CancelEnrollment(enrollment_id=enrollment_id))
        return EnrollmentOut(
            enrollment_id=view.enrollment_id,
            lesson_id=view.lesson_id,
            student_id=view.student_id,
            status=view.status,
        )

    @api.get("/enrollments/{enrollment_id}")
    def get_enrollment(enrollment_id: UUID) -> EnrollmentOut:
        view = app.view_enrollment(enrollment_id)
        return EnrollmentOut(
            enrollment_id=view.enrollment_id,
            lesson_id=view.lesson_id,
            student_id=view.student_id,
            status=view.status,
        )

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

    return BodyLimit(api)  # type: ignore[return-value]


def _position(conn: sa.Connection, consumer: str) -> int:
    """The stream sequence a read model reflects, read in the same snapshot."""
    conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    position = conn.execute(
        sa.select(consumer_positions.c.stream_seq).where(
            consumer_positions.c.consumer == consumer
        )
    ).scalar()
    return int(position or 0)


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


def _idempotent(
    container: Container,
    request: Request,
    key: str,
    body: Any,
    run: Callable[[], JSONResponse],
) -> Response:
    """Run once per key; replay the stored answer to every retry."""
    if not 0 < len(key) <= MAX_KEY_LENGTH:
        return problem(
            400, "invalid-idempotency-key", "Invalid Idempotency-Key",
            f"the key must be 1 to {MAX_KEY_LENGTH} characters",
        )  # fmt: skip
    scope = f"{request.method} {request.scope['route'].path}"
    canonical = json.dumps([request.url.path, body], sort_keys=True)
    fingerprint = hashlib.sha256(canonical.encode()).hexdigest()
    store = container.idempotency
    match store.begin(scope, key, fingerprint):
        case Replay(status_code, stored, headers):
            media = headers.pop("content-type", None)
            return JSONResponse(stored, status_code, headers=headers, media_type=media)
        case Mismatch():
            return problem(
                422, "idempotency-key-reused", "Idempotency-Key reused",
                "this key was used with another request body; use a new key",
            )  # fmt: skip
        case InFlight():
            return problem(
                409, "request-in-flight", "Request in flight",
                "the first request with this key is still running; retry shortly",
                headers={"Retry-After": "1"},
            )  # fmt: skip
        case Started():
            pass
    try:
        response = run()
        crash_point(
            "api.after_commit"
        )  # committed; the answer is neither stored nor sent
    except Exception as error:
        known = problem_for(error)
        if known is None or known.status_code >= 500:  # noqa: PLR2004
            store.release(scope, key)  # let the retry run afresh
            raise
        response = known
    headers = {k: v for k, v in response.headers.items() if k in ("location",)}
    headers["content-type"] = response.media_type or "application/json"
    store.complete(scope, key, response.status_code, json.loads(response.body), headers)
    return response


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


def _install_error_handlers(api: FastAPI) -> None:
    @api.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        title = {404: "Not Found", 405: "Method Not Allowed"}.get(
            exc.status_code, "Error"
        )
        return problem(
            exc.status_code, None, title, str(exc.detail), headers=exc.headers
        )

    @api.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> Response:
        errors = [
            {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors()
        ]
        return problem(422, "validation-error", "Invalid request", errors=errors)

    async def known(_: Request, exc: Exception) -> Response:
        response = problem_for(exc)
        assert response is not None  # noqa: S101 - registered only for known classes
        return response

    # Registered one by one: the catch-all below would answer, then re-raise.
    for cls in KNOWN_ERRORS:
        api.add_exception_handler(cls, known)

    @api.exception_handler(Exception)
    async def bug(_: Request, exc: Exception) -> Response:
        log.exception("http.unhandled", error=repr(exc))
        return problem(500, "internal-error", "Internal error", "see the server log")
