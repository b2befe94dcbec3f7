"""Enrollments: take a seat (idempotent, required key), cancel, read with its e-mail."""

from __future__ import annotations

from functools import partial
from uuid import UUID

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from application.club import EnrollmentView
from application.commands import CancelEnrollment, EnrollStudent
from application.identity import may_act_for_student, may_read_own
from application.notification_record import Notification
from domain.student import check_student_id
from entrypoints.http.api_docs import ENROLLMENT_LINKS, merged, problems
from entrypoints.http.auth import CallerDep
from entrypoints.http.deps import ContainerDep, RequiredIdempotencyKey
from entrypoints.http.idempotent import run_once
from entrypoints.http.schemas import EnrollmentIn, EnrollmentOut, NotificationOut

router = APIRouter()


@router.post(
    "/lessons/{lesson_id}/enrollments",
    status_code=201,
    operation_id="enroll_student",
    response_model=EnrollmentOut,
    responses=merged(
        {201: ENROLLMENT_LINKS}, problems(400, 401, 403, 404, 409, 413, 422, 503)
    ),
)
def post_enrollment(
    lesson_id: UUID,
    body: EnrollmentIn,
    request: Request,
    *,
    container: ContainerDep,
    caller: CallerDep,
    key: RequiredIdempotencyKey,
) -> Response:
    may_act_for_student(caller, body.student_id)  # for itself only
    cmd = EnrollStudent(
        lesson_id=lesson_id,
        student_id=check_student_id(body.student_id),
        request_id=key,
    )
    return run_once(
        request,
        key,
        body.model_dump(mode="json"),
        partial(container.app.enroll_once, cmd),
        created,
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


def created(view: object) -> JSONResponse:
    assert isinstance(view, EnrollmentView)  # noqa: S101 - the use case's result
    body = enrollment_out(view).model_dump(mode="json", exclude={"notification"})
    location = f"/enrollments/{view.enrollment_id}"
    return JSONResponse(body, status_code=201, headers={"Location": location})


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
