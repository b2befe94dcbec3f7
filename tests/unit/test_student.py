"""A student's profile: the id, address and name rules."""

from __future__ import annotations

import pytest

from domain.errors import (
    ControlCharacterError,
    InvalidStudentProfileError,
    TextLengthError,
)
from domain.student import StudentProfile, check_student_id


@pytest.mark.parametrize("student_id", ["ann\n", "ann\r\n", "", "-ann", "a" * 65, "än"])
def test_a_student_id_must_match_in_full(student_id) -> None:
    with pytest.raises(InvalidStudentProfileError):
        check_student_id(student_id)


def test_a_student_id_of_64_characters_is_kept() -> None:
    assert check_student_id("a" * 64) == "a" * 64


@pytest.mark.parametrize(
    ("email", "error"),
    [
        ("ann@example.org\n", ControlCharacterError),
        ("ann\u0000@example.org", ControlCharacterError),
        ("ann@example", InvalidStudentProfileError),
        ("ann@@example.org", InvalidStudentProfileError),
        ("a nn@example.org", InvalidStudentProfileError),
        ("a" * 65 + "@example.org", InvalidStudentProfileError),
        ("ann@" + "e" * 250 + ".org", InvalidStudentProfileError),
    ],
)
def test_an_address_it_cannot_use_is_refused(email, error) -> None:
    with pytest.raises(error):
        StudentProfile.create(student_id="ann", email=email, name="Ann")


@pytest.mark.parametrize(
    ("name", "error"),
    [("A\u0000nn", ControlCharacterError), ("\u2003", TextLengthError)],
)
def test_a_name_it_cannot_store_is_refused(name, error) -> None:
    with pytest.raises(error):
        StudentProfile.create(student_id="ann", email="ann@example.org", name=name)


def test_a_profile_is_kept_trimmed_and_nfc() -> None:
    profile = StudentProfile.create(
        student_id="ann", email=" ann@exa\u0301mple.org ", name=" Zoe\u0308 "
    )
    assert (profile.email, profile.name) == ("ann@exámple.org", "Zoë")
