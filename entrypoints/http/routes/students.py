"""PUT /students/{id}: the profile notifications read at send time."""

from __future__ import annotations

from fastapi import APIRouter

from application.identity import may_act_for_student
from domain.student import StudentProfile
from entrypoints.http.api_docs import problems
from entrypoints.http.auth import CallerDep
from entrypoints.http.deps import ContainerDep
from entrypoints.http.schemas import StudentIdPath, StudentIn, StudentOut

router = APIRouter()


@router.put(
    "/students/{student_id}",
    operation_id="put_student",
    responses=problems(401, 403, 413, 422, 503),
)
def put_student(
    student_id: StudentIdPath,
    body: StudentIn,
    container: ContainerDep,
    caller: CallerDep,
) -> StudentOut:
    may_act_for_student(caller, student_id)
    profile = StudentProfile.create(
        student_id=student_id, email=body.email, name=body.name
    )
    container.students.save(profile)
    return StudentOut(student_id=student_id, email=profile.email, name=profile.name)
