"""Who calls, and what each caller may do: the rules of contract §4.1, pure.

A verified token becomes a `Caller`; each rule takes the caller and the facts it
needs (whose enrollment, whose lesson) and answers with nothing or raises. Two
refusals: `ForbiddenError` (403) when the caller lacks the right, and the very
`NotFoundError` a missing one gets (404) for someone else's enrollment or purchase,
so its existence is not told.
"""

from __future__ import annotations

import enum
from uuid import UUID

import attrs

from application.errors import NotFoundError


class Role(enum.StrEnum):
    STUDENT = "student"
    TEACHER = "teacher"
    ADMIN = "admin"


@attrs.frozen
class Caller:
    sub: str
    roles: frozenset[Role]

    @property
    def is_admin(self) -> bool:
        return Role.ADMIN in self.roles

    def acts_as(self, role: Role, who: str) -> bool:
        """`who` is this caller in `role`, or the caller is an admin."""
        return self.is_admin or (role in self.roles and self.sub == who)


class ForbiddenError(Exception):
    """A good token without the right (403); the message says which right."""


def may_act_for_student(caller: Caller, student_id: str) -> None:
    """A profile, an enrollment, a purchase for `student_id`: that student only."""
    if not caller.acts_as(Role.STUDENT, student_id):
        msg = "only the student named in the request (or an admin) may do this"
        raise ForbiddenError(msg)


def may_read_own(caller: Caller, student_id: str, kind: str, id_: UUID) -> None:
    """An enrollment or purchase belongs to its student; to anyone else it is
    answered exactly as one that does not exist."""
    if not caller.acts_as(Role.STUDENT, student_id):
        raise NotFoundError(kind, id_)


def may_schedule_lessons(caller: Caller) -> None:
    if not (caller.is_admin or Role.TEACHER in caller.roles):
        raise ForbiddenError("only a teacher (or an admin) schedules lessons")


def may_see_lesson_roster(caller: Caller, teacher_id: str | None) -> None:
    """A lesson's roster, its exports and their operations: its teacher's (a lesson
    scheduled before lessons recorded their teacher: an admin's only)."""
    owner = teacher_id is not None and caller.acts_as(Role.TEACHER, teacher_id)
    if not (owner or caller.is_admin):
        raise ForbiddenError("only the lesson's teacher (or an admin) sees this")


def may_read_statistics(caller: Caller) -> None:
    if not caller.is_admin:
        raise ForbiddenError("only an admin reads the statistics")
