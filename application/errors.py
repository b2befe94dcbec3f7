"""Failures of a use case that are not business rules."""

from uuid import UUID


class ApplicationError(Exception):
    """A use case could not run as asked."""


class NotFoundError(ApplicationError):
    def __init__(self, kind: str, id_: UUID) -> None:
        super().__init__(f"{kind} {id_} does not exist")
        self.kind = kind
        self.id = id_


class ContentionError(ApplicationError):
    """Too many concurrent writers on one aggregate; the caller may retry."""


class UnknownStudentError(ApplicationError):
    """Enrollment needs a profile first: notifications are sent to its address."""

    def __init__(self, student_id: str) -> None:
        super().__init__(
            f"student {student_id} has no profile; PUT /students/{student_id} first"
        )
        self.student_id = student_id
