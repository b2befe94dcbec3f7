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
