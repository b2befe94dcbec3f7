"""Lessons: schedule one (idempotent with a key), read it, read its roster."""

from __future__ import annotations

from functools import partial
from typing import Any
from uuid import UUID, uuid4

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from application.commands import ScheduleLesson
from application.identity import may_schedule_lessons, may_see_lesson_roster
from application.ids import lesson_id_for
from domain.lesson import Lesson
from entrypoints.http.api_docs import LESSON_LINKS, merged, problems
from entrypoints.http.auth import CallerDep
from entrypoints.http.deps import ContainerDep, IdempotencyKey
from entrypoints.http.idempotent import run_once
from entrypoints.http.paging import (
    DEFAULT_LIMIT,
    After,
    Limit,
    encode,
    next_link,
    roster_cursor,
)
from entrypoints.http.schemas import LessonIn, LessonOut, RosterOut
from projections import rosters

router = APIRouter()


@router.post(
    "/lessons",
    status_code=201,
    operation_id="schedule_lesson",
    response_model=LessonOut,
    responses=merged({201: LESSON_LINKS}, problems(400, 401, 403, 409, 413, 422, 503)),
)
def post_lesson(
    body: LessonIn,
    request: Request,
    container: ContainerDep,
    caller: CallerDep,
    key: IdempotencyKey = None,
) -> Response:
    may_schedule_lessons(caller)
    app = container.app
    facts = body.model_dump() | {"teacher_id": caller.sub}
    if key is None:
        cmd = ScheduleLesson(lesson_id=uuid4(), **facts)
        return created(app.get_lesson(app.schedule_lesson(cmd)))
    cmd = ScheduleLesson(lesson_id=lesson_id_for(key), **facts)
    return run_once(
        request,
        key,
        body.model_dump(mode="json"),
        partial(app.schedule_lesson_once, cmd),
        created,
    )


@router.get(
    "/lessons/{lesson_id}",
    operation_id="get_lesson",
    responses=problems(401, 404, 422, 503),
)
def get_lesson(lesson_id: UUID, container: ContainerDep, _: CallerDep) -> LessonOut:
    return lesson_out(container.app.get_lesson(lesson_id))  # any valid token


@router.get(
    "/lessons/{lesson_id}/roster",
    operation_id="get_roster",
    response_model=RosterOut,
    responses=problems(401, 403, 404, 422, 503),
)
def get_roster(
    lesson_id: UUID,
    container: ContainerDep,
    caller: CallerDep,
    limit: Limit = DEFAULT_LIMIT,
    after: After = None,
) -> dict[str, Any]:
    lesson = container.app.get_lesson(lesson_id)  # 404 for a lesson that does not exist
    may_see_lesson_roster(caller, lesson.teacher_id)
    start = roster_cursor(after)
    with container.engine.begin() as conn:
        roster = rosters.read(conn, lesson_id, limit=limit, after=start)
    students = roster["students"]
    last = None
    if len(students) == limit:
        final = students[-1]
        at = final["enrolled_at"] or rosters.NEVER.isoformat()
        last = encode(at, final["enrollment_id"])
    path = f"/lessons/{lesson_id}/roster"
    return {"lesson_id": str(lesson_id), "title": lesson.title, **roster} | {
        "next": next_link(path, limit, last)
    }


def created(lesson: object) -> JSONResponse:
    assert isinstance(lesson, Lesson)  # noqa: S101 - the use case's result
    body = lesson_out(lesson).model_dump(mode="json")
    return JSONResponse(
        body, status_code=201, headers={"Location": f"/lessons/{lesson.id}"}
    )


def lesson_out(lesson: Lesson) -> LessonOut:
    return LessonOut(
        lesson_id=lesson.id,
        title=lesson.title,
        capacity=lesson.capacity,
        seats_taken=lesson.seats_taken,
        seats_held=lesson.seats_held,
        starts_at=lesson.starts_at,
        price_cents=lesson.price_cents,
        version=lesson.version,
    )
