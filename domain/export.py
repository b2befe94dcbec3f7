"""The Export aggregate: one asynchronous roster export, from request to file.

"Ready" means different things (docs/background.md §33): for an export, the answer to
the
request only says the work is *recorded*. The states say exactly how far it got:

    pending -> running -> succeeded (the file is complete: written, synced, renamed)
                       -> failed    (a reason a person can read)

`running` may be recorded again: a worker that died mid-export leaves it running,
and the redelivered request starts it afresh. A finished export never changes.
"""

from __future__ import annotations

import enum
from datetime import datetime
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import DomainError

MAX_REASON_LENGTH = 500


class ExportStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class InvalidExportError(DomainError):
    """An export request's facts are out of bounds."""


class ExportFinishedError(DomainError):
    """The export already succeeded or failed; a finished export never changes."""


class ExportNotRunningError(DomainError):
    """Only a running export can succeed: nothing is complete before it started."""


class Export(Aggregate):
    """A roster export of one lesson, as the lesson stood when it was requested."""

    class Requested(Aggregate.Created):
        lesson_id: UUID
        lesson_version: int  # the roster is read as of this version: reproducible
        requested_at: datetime

    class Started(Aggregate.Event):
        started_at: datetime

    class Succeeded(Aggregate.Event):
        result_name: str
        rows: int
        finished_at: datetime

    class Failed(Aggregate.Event):
        reason: str
        finished_at: datetime

    @event(Requested)
    def __init__(
        self,
        id: UUID,  # the operation id, chosen by the caller
        lesson_id: UUID,
        lesson_version: int,
        requested_at: datetime,
    ) -> None:
        self.lesson_id = lesson_id
        self.lesson_version = lesson_version
        self.requested_at = requested_at
        self.status = ExportStatus.PENDING
        self.attempts = 0
        self.started_at: datetime | None = None
        self.finished_at: datetime | None = None
        self.result_name: str | None = None
        self.rows: int | None = None
        self.error: str | None = None

    @classmethod
    def request(
        cls,
        *,
        export_id: UUID,
        lesson_id: UUID,
        lesson_version: int,
        requested_at: datetime,
    ) -> Export:
        if requested_at.utcoffset() is None:
            msg = "requested_at must carry a time zone"
            raise InvalidExportError(msg)
        if lesson_version < 1:
            msg = f"lesson_version must be 1 or more, not {lesson_version}"
            raise InvalidExportError(msg)
        return cls(
            id=export_id,
            lesson_id=lesson_id,
            lesson_version=lesson_version,
            requested_at=requested_at,
        )

    @property
    def finished(self) -> bool:
        return self.status in (ExportStatus.SUCCEEDED, ExportStatus.FAILED)

    def start(self, *, now: datetime) -> None:
        self._refuse_if_finished()
        self._start(started_at=now)

    def succeed(self, *, result_name: str, rows: int, now: datetime) -> None:
        self._refuse_if_finished()
        if self.status is not ExportStatus.RUNNING:
            msg = f"export {self.id} is {self.status}, not running: start it first"
            raise ExportNotRunningError(msg)
        self._succeed(result_name=result_name, rows=rows, finished_at=now)

    def fail(self, *, reason: str, now: datetime) -> None:
        self._refuse_if_finished()
        self._fail(reason=reason[:MAX_REASON_LENGTH], finished_at=now)

    def _refuse_if_finished(self) -> None:
        if self.finished:
            msg = f"export {self.id} already {self.status}"
            raise ExportFinishedError(msg)

    @event(Started)
    def _start(self, started_at: datetime) -> None:
        self.status = ExportStatus.RUNNING
        self.attempts += 1
        self.started_at = started_at

    @event(Succeeded)
    def _succeed(self, result_name: str, rows: int, finished_at: datetime) -> None:
        self.status = ExportStatus.SUCCEEDED
        self.result_name = result_name
        self.rows = rows
        self.finished_at = finished_at

    @event(Failed)
    def _fail(self, reason: str, finished_at: datetime) -> None:
        self.status = ExportStatus.FAILED
        self.error = reason
        self.finished_at = finished_at
