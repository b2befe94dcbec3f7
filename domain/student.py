"""A student's profile: the address notifications are sent to."""

from __future__ import annotations

import re

import attrs

from domain.errors import InvalidStudentProfileError
from domain.text import FORBIDDEN, WHITESPACE, normalised, single_line

# `fullmatch` below: a `$` would let a trailing newline through.
STUDENT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
# One '@', a local part of at most 64 characters, a dotted domain: no whitespace or
# control character anywhere. Unicode is allowed (RFC 6531 addresses); whether the
# mailbox exists is for the mail service to say.
_ADDRESS_CHAR = rf"[^@{FORBIDDEN}{WHITESPACE}]"
_ADDRESS = rf"{_ADDRESS_CHAR}{{1,64}}@{_ADDRESS_CHAR}+\.{_ADDRESS_CHAR}{{2,}}"
# As sent: surrounding whitespace is trimmed (a pasted address often carries some).
EMAIL_PATTERN = rf"^[{WHITESPACE}]*{_ADDRESS}[{WHITESPACE}]*$"
_STUDENT_ID = re.compile(STUDENT_ID_PATTERN[1:-1])
_EMAIL = re.compile(_ADDRESS)
MAX_NAME_LENGTH = 200
MAX_EMAIL_LENGTH = 254
MAX_STUDENT_ID_LENGTH = 64


def check_student_id(student_id: str) -> str:
    """Student ids come from the caller; keep them short and printable."""
    if not _STUDENT_ID.fullmatch(student_id):
        msg = (
            "student_id must be 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
        raise InvalidStudentProfileError(msg)
    return student_id


def check_email(email: str) -> str:
    """A sane address, trimmed and NFC-normalised."""
    email = normalised(email, field="email")
    if len(email) > MAX_EMAIL_LENGTH or not _EMAIL.fullmatch(email):
        msg = (
            f"email {email!r} is not an address like name@example.org "
            f"(at most {MAX_EMAIL_LENGTH} characters, no spaces)"
        )
        raise InvalidStudentProfileError(msg)
    return email


@attrs.frozen(kw_only=True)
class StudentProfile:
    """Mutable personal data lives outside the event log so it can be erased."""

    student_id: str
    email: str
    name: str

    @classmethod
    def create(cls, *, student_id: str, email: str, name: str) -> StudentProfile:
        return cls(
            student_id=check_student_id(student_id),
            email=check_email(email),
            name=single_line(name, field="name", max_length=MAX_NAME_LENGTH),
        )
