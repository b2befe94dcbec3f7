"""A student's profile: the address notifications are sent to."""

from __future__ import annotations

import re

import attrs

from domain.errors import InvalidStudentProfileError

_STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")
MAX_NAME_LENGTH = 200
MAX_EMAIL_LENGTH = 254


def check_student_id(student_id: str) -> str:
    """Student ids come from the caller; keep them short and printable."""
    if not _STUDENT_ID.match(student_id):
        msg = (
            "student_id must be 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
        raise InvalidStudentProfileError(msg)
    return student_id


@attrs.frozen(kw_only=True)
class StudentProfile:
    """Mutable personal data lives outside the event log so it can be erased."""

    student_id: str
    email: str
    name: str

    @classmethod
    def create(cls, *, student_id: str, email: str, name: str) -> StudentProfile:
        email, name = email.strip(), name.strip()
        if len(email) > MAX_EMAIL_LENGTH or not _EMAIL.match(email):
            msg = f"email {email!r} is not an address like name@example.org"
            raise InvalidStudentProfileError(msg)
        if not 0 < len(name) <= MAX_NAME_LENGTH:
            msg = f"name must be 1 to {MAX_NAME_LENGTH} characters"
            raise InvalidStudentProfileError(msg)
        return cls(student_id=check_student_id(student_id), email=email, name=name)
