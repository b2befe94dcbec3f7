"""The Enrollment aggregate and the student profile rules."""

import json
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import uuid4

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent

from domain.enrollment import Enrollment
from domain.errors import (
    EnrollmentCancelledError,
    InvalidStudentProfileError,
    TextLengthError,
)
from domain.student import StudentProfile
from tests.unit.given import given, when

LESSON = uuid4()


def confirmed() -> Enrollment:
    return Enrollment.confirm(
        enrollment_id=uuid4(), lesson_id=LESSON, student_id="s-1", request_id="key-1"
    )


def cancelled(reason: str) -> Callable[[Enrollment], object]:
    return lambda enrollment: enrollment.cancel(reason=reason)


def test_confirm_records_confirmed_with_the_request_id() -> None:
    enrollment = confirmed()
    [event] = enrollment.collect_events()
    assert isinstance(event, Enrollment.Confirmed)
    assert (event.lesson_id, event.student_id, event.request_id) == (
        LESSON, "s-1", "key-1",
    )  # fmt: skip
    assert enrollment.status == "confirmed"


def test_cancel_records_cancelled_with_reason() -> None:
    enrollment = given(confirmed)
    [event] = when(enrollment, cancelled("schedule clash"))  # then: one new fact
    assert isinstance(event, Enrollment.Cancelled)
    assert event.reason == "schedule clash"
    assert (event.lesson_id, event.student_id) == (LESSON, "s-1")
    assert enrollment.status == "cancelled"


def test_cancelling_twice_is_refused() -> None:
    enrollment = given(confirmed, cancelled("first"))
    with pytest.raises(EnrollmentCancelledError):
        when(enrollment, cancelled("second"))
    assert enrollment.collect_events() == []


def test_profile_trims_and_keeps_a_valid_address() -> None:
    profile = StudentProfile.create(student_id="s-1", email=" a@b.org ", name=" Ann ")
    assert (profile.email, profile.name) == ("a@b.org", "Ann")


@pytest.mark.parametrize(
    ("student_id", "email", "name"),
    [
        ("s 1", "a@b.org", "Ann"),
        ("", "a@b.org", "Ann"),
        ("s-1", "not-an-address", "Ann"),
    ],
)
def test_profile_refuses_malformed_fields(student_id, email, name) -> None:
    with pytest.raises(InvalidStudentProfileError):
        StudentProfile.create(student_id=student_id, email=email, name=name)


def test_profile_refuses_a_blank_name_by_the_text_rule() -> None:
    with pytest.raises(TextLengthError):
        StudentProfile.create(student_id="s-1", email="a@b.org", name=" ")


def test_a_stored_v1_confirmation_is_upcast_with_no_lesson_start() -> None:
    """Internal events evolve by class_version; old stored ones still load."""
    app = Application()
    enrollment = Enrollment.confirm(
        enrollment_id=uuid4(), lesson_id=LESSON, student_id="s-1", request_id="k",
        lesson_starts_at=datetime(2026, 12, 1, tzinfo=UTC),
    )  # fmt: skip
    [confirmed] = enrollment.collect_events()
    stored = app.mapper.to_stored_event(confirmed)
    state = json.loads(stored.state)
    assert state.pop("class_version") == 2
    del state["lesson_starts_at"]  # exactly what a v1 event held
    as_v1 = StoredEvent(
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic,
        state=json.dumps(state).encode(),
    )
    loaded = app.mapper.to_domain_event(as_v1)
    assert isinstance(loaded, Enrollment.Confirmed)
    assert loaded.lesson_starts_at is None
    assert loaded.student_id == "s-1"
