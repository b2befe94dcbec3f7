"""Who may do what (contract §4.1), rule by rule, as a table."""

from __future__ import annotations

from collections.abc import Callable
from uuid import uuid4

import pytest

from application.errors import NotFoundError
from application.identity import (
    Caller,
    ForbiddenError,
    Role,
    may_act_for_student,
    may_read_own,
    may_read_statistics,
    may_schedule_lessons,
    may_see_lesson_roster,
)

pytestmark = pytest.mark.unit

ANN = Caller("ann", frozenset({Role.STUDENT}))
BOB = Caller("bob", frozenset({Role.STUDENT}))
TESS = Caller("tess", frozenset({Role.TEACHER}))
TOM = Caller("tom", frozenset({Role.TEACHER}))
ADA = Caller("ada", frozenset({Role.ADMIN}))
NOBODY = Caller("x", frozenset())
ID = uuid4()

ALLOWED, FORBIDDEN, HIDDEN = "allowed", "403", "404"


def _answer(rule: Callable[[], None]) -> str:
    try:
        rule()
    except ForbiddenError:
        return FORBIDDEN
    except NotFoundError:
        return HIDDEN
    return ALLOWED


@pytest.mark.parametrize(
    ("caller", "student", "expected"),
    [
        (ANN, "ann", ALLOWED),
        (BOB, "ann", FORBIDDEN),  # enroll or buy for another student
        (TESS, "tess", FORBIDDEN),  # a teacher is no student
        (ADA, "ann", ALLOWED),
        (NOBODY, "x", FORBIDDEN),
    ],
)
def test_acting_for_a_student(caller: Caller, student: str, expected: str) -> None:
    assert _answer(lambda: may_act_for_student(caller, student)) == expected


@pytest.mark.parametrize(
    ("caller", "owner", "expected"),
    [
        (ANN, "ann", ALLOWED),
        (BOB, "ann", HIDDEN),  # someone else's: its existence is not told
        (TESS, "ann", HIDDEN),
        (ADA, "ann", ALLOWED),
    ],
)
def test_reading_an_enrollment_or_purchase(
    caller: Caller, owner: str, expected: str
) -> None:
    assert _answer(lambda: may_read_own(caller, owner, "enrollment", ID)) == expected


def test_someone_elses_is_answered_as_a_missing_one() -> None:
    with pytest.raises(NotFoundError) as hidden:
        may_read_own(BOB, "ann", "enrollment", ID)
    assert str(hidden.value) == str(NotFoundError("enrollment", ID))


@pytest.mark.parametrize(
    ("caller", "expected"),
    [(TESS, ALLOWED), (ADA, ALLOWED), (ANN, FORBIDDEN), (NOBODY, FORBIDDEN)],
)
def test_scheduling_a_lesson(caller: Caller, expected: str) -> None:
    assert _answer(lambda: may_schedule_lessons(caller)) == expected


@pytest.mark.parametrize(
    ("caller", "teacher", "expected"),
    [
        (TESS, "tess", ALLOWED),
        (TOM, "tess", FORBIDDEN),  # another teacher's lesson
        (ANN, "tess", FORBIDDEN),
        (ANN, "ann", FORBIDDEN),  # a student named like the teacher: no teacher role
        (ADA, "tess", ALLOWED),
        (TESS, None, FORBIDDEN),  # a lesson from before teachers were recorded
        (ADA, None, ALLOWED),
    ],
)
def test_a_lessons_roster(caller: Caller, teacher: str | None, expected: str) -> None:
    assert _answer(lambda: may_see_lesson_roster(caller, teacher)) == expected


@pytest.mark.parametrize(
    ("caller", "expected"), [(ADA, ALLOWED), (TESS, FORBIDDEN), (ANN, FORBIDDEN)]
)
def test_the_statistics(caller: Caller, expected: str) -> None:
    assert _answer(lambda: may_read_statistics(caller)) == expected
