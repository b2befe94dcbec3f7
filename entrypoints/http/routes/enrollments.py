"""Enrollments: take a seat (idempotent, required key), cancel, read with its e-mail."""

from __future__ import annotations

import re
from functools import partial
from uuid import UUID

import msgspec
from fastapi import APIRouter, Request
from fastapi.responses import Response

from application.club import EnrollmentView
from application.commands import CancelEnrollment, EnrollStudent
from application.idempotency import Answer
from application.identity import Caller, may_act_for_student, may_read_own
from application.notification_record import Notification
from domain.student import STUDENT_ID_PATTERN, check_student_id
from entrypoints.config.container import Container
from entrypoints.http.api_docs import ENROLLMENT_LINKS, merged, problems
from entrypoints.http.auth import CallerDep, verified_caller
from entrypoints.http.deps import ContainerDep, RequiredIdempotencyKey
from entrypoints.http.idempotent import MAX_KEY_LENGTH, run_once
from entrypoints.http.lean_route import lean_route
from entrypoints.http.schemas import EnrollmentIn, EnrollmentOut, NotificationOut
from entrypoints.http.threads import in_thread

router = APIRouter()


def post_enrollment(
    lesson_id: UUID,
    body: EnrollmentIn,
    request: Request,
    *,
    container: ContainerDep,
    caller: CallerDep,
    key: RequiredIdempotencyKey,
) -> Response:
    student_id = body.student_id
    return _enroll(
        request, container, caller, lesson_id=lesson_id, student_id=student_id, key=key
    )


def _enroll(
    request: Request,
    container: Container,
    caller: Caller,
    *,
    lesson_id: UUID,
    student_id: str,
    key: str,
) -> Response:
    may_act_for_student(caller, student_id)  # for itself only
    cmd = EnrollStudent(
        lesson_id=lesson_id,
        student_id=check_student_id(student_id),
        request_id=key,
    )
    return run_once(
        request,
        key,
        {"student_id": student_id},  # the body as EnrollmentIn dumps it
        partial(container.app.enroll_once, cmd),
        created,
    )


class _EnrollmentBody(msgspec.Struct, forbid_unknown_fields=True):
    student_id: str


_DECODE_BODY = msgspec.json.Decoder(_EnrollmentBody).decode
_STUDENT_ID = re.compile(STUDENT_ID_PATTERN[1:-1])  # EnrollmentIn's, as fullmatch
_CANONICAL_UUID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


async def _enroll_lean(request: Request) -> Response | None:
    """`post_enrollment` for a request every check of its declaration passes: a
    canonical UUID, a key of 1 to 255 characters, a JSON body that is exactly
    EnrollmentIn; one hand-off to a thread for the database. Anything else is
    handed to FastAPI, whose answers (and errors) are the route's contract."""
    given_lesson = request.path_params.get("lesson_id", "")
    key = request.headers.get("idempotency-key")
    media = request.headers.get("content-type", "").split(";", 1)[0]
    if (
        not _CANONICAL_UUID.fullmatch(given_lesson)
        or key is None
        or not 0 < len(key) <= MAX_KEY_LENGTH
        or media.strip().lower() != "application/json"
    ):
        return None
    try:
        body = _DECODE_BODY(await request.body())
    except msgspec.MsgspecError:  # FastAPI names what is wrong
        return None
    if not _STUDENT_ID.fullmatch(body.student_id):
        return None
    caller = await verified_caller(request)
    container: Container = request.app.state.container
    return await in_thread(
        partial(
            _enroll,
            request,
            container,
            caller,
            lesson_id=UUID(given_lesson),
            student_id=body.student_id,
            key=key,
        )
    )


router.add_api_route(
    "/lessons/{lesson_id}/enrollments",
    post_enrollment,
    methods=["POST"],
    status_code=201,
    operation_id="enroll_student",
    response_model=EnrollmentOut,
    responses=merged(
        {201: ENROLLMENT_LINKS}, problems(400, 401, 403, 404, 409, 413, 422, 503)
    ),
    route_class_override=lean_route(_enroll_lean),
)


@router.post(
    "/enrollments/{enrollment_id}/cancel",
    operation_id="cancel_enrollment",
    responses=problems(401, 404, 413, 422, 503),
)
def cancel_enrollment(
    enrollment_id: UUID, container: ContainerDep, caller: CallerDep
) -> EnrollmentOut:
    owner = container.app.view_enrollment(enrollment_id).student_id
    may_read_own(caller, owner, "enrollment", enrollment_id)
    cmd = CancelEnrollment(enrollment_id=enrollment_id)
    return enrollment_out(container.app.cancel_enrollment(cmd))


@router.get(
    "/enrollments/{enrollment_id}",
    operation_id="get_enrollment",
    responses=problems(401, 404, 422, 503),
)
def get_enrollment(
    enrollment_id: UUID, container: ContainerDep, caller: CallerDep
) -> EnrollmentOut:
    view = container.app.view_enrollment(enrollment_id)
    may_read_own(caller, view.student_id, "enrollment", enrollment_id)
    notification = container.notifications.for_enrollment(enrollment_id)
    return enrollment_out(view, notification)


def created(view: object) -> Answer:
    """EnrollmentOut without its notification, as JSON, built as it is stored: no
    model to validate, no response rendered to be read back."""
    assert isinstance(view, EnrollmentView)  # noqa: S101 - the use case's result
    enrollment_id = str(view.enrollment_id)
    body = {
        "enrollment_id": enrollment_id,
        "lesson_id": str(view.lesson_id),
        "student_id": view.student_id,
        "status": view.status,
    }
    headers = {
        "location": f"/enrollments/{enrollment_id}",
        "content-type": "application/json",
    }
    return Answer(status_code=201, body=body, headers=headers)


def enrollment_out(
    view: EnrollmentView, notification: Notification | None = None
) -> EnrollmentOut:
    return EnrollmentOut(
        enrollment_id=view.enrollment_id,
        lesson_id=view.lesson_id,
        student_id=view.student_id,
        status=view.status,
        notification=None
        if notification is None
        else NotificationOut(
            kind=notification.kind.value,
            state=notification.state.value,
            attempts=notification.attempts,
            last_error=notification.last_error,
            sent_at=notification.sent_at,
        ),
    )
