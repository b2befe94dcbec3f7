"""The stored answer to an enrollment is EnrollmentOut as FastAPI would render it,
built without the model (entrypoints/http/routes/enrollments.py:created)."""

from __future__ import annotations

from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from application.club import EnrollmentView
from entrypoints.http.routes.enrollments import created
from entrypoints.http.schemas import EnrollmentOut

VIEWS = st.builds(
    EnrollmentView,
    enrollment_id=st.uuids(),
    lesson_id=st.uuids(),
    student_id=st.text(min_size=1, max_size=64),
    status=st.sampled_from(["confirmed", "cancelled"]),
    version=st.integers(min_value=1, max_value=2**31),
)


@given(VIEWS)
def test_the_answer_is_the_models_json(view: EnrollmentView) -> None:
    answer = created(view)
    model = EnrollmentOut(
        enrollment_id=view.enrollment_id,
        lesson_id=view.lesson_id,
        student_id=view.student_id,
        status=view.status,
    )
    assert answer.body == model.model_dump(mode="json", exclude={"notification"})
    assert list(answer.body) == ["enrollment_id", "lesson_id", "student_id", "status"]
    assert answer.status_code == 201
    assert answer.headers == {
        "location": f"/enrollments/{UUID(answer.body['enrollment_id'])}",
        "content-type": "application/json",
    }
