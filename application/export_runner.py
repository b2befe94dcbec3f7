"""Roster exports, the worker side: run one export and record every step.

    Started -> roster read, file written complete       -> Succeeded
            -> the lesson cannot be read (permanent)     -> Failed
            -> the file cannot be written (transient)    -> retry; at the limit, Failed

The roster is read from the event store, as the lesson stood at the version the
request recorded (not from the rosters projection): the file is reproducible, owes
nothing to a projection's lag or rebuild, and a retry writes the same rows.
`Succeeded` is recorded only after the file is complete under its final name, so
nothing says "ready" before it is. A redelivered request for a finished export
changes nothing: the aggregate's state says it is done.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from uuid import UUID

import attrs
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from application.club import ClubApplication
from application.errors import NotFoundError
from application.notifications import Done, GiveUp, Outcome, Retry, RetryPolicy
from application.ports import ExportFiles, StudentNames
from domain.export import Export
from domain.lesson import Lesson

HEADER = ("enrollment_id", "student_id", "name")
FINISH_ATTEMPTS = 5  # racing runs of one export are few: a redelivery or two


# Told when an export starts past the work class's age limit: (export id, age s).
OverAge = Callable[[UUID, float], None]


def _now() -> datetime:
    return datetime.now(UTC)


@attrs.frozen(kw_only=True)
class AgeLimit:
    """Heavy work may wait, but not for ever unnoticed (docs/background.md §33)."""

    max_age_s: float
    report: OverAge


class ExportRunner:
    def __init__(
        self,
        *,
        app: ClubApplication,
        names: StudentNames,
        files: ExportFiles,
        age_limit: AgeLimit | None = None,
        policy: RetryPolicy | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._app = app
        self._names = names
        self._files = files
        self._age_limit = age_limit
        self._policy = policy or RetryPolicy(max_attempts=5)
        self._clock = clock

    def handle(self, export_id: UUID) -> Outcome:
        try:
            export = self._app.get_export(export_id)
        except NotFoundError:
            return GiveUp(f"export {export_id} is not in the event store")
        if export.finished:
            return Done()  # a redelivery after the outcome was recorded
        now = self._clock()
        self._check_age(export, now)
        export.start(now=now)
        if not self._saved(export):
            return _raced(self._policy)
        return self._run(export)

    def _run(self, export: Export) -> Outcome:
        """Started is recorded: read, write, then record how it ended."""
        try:
            header, rows = self._roster(export)
        except NotFoundError as error:
            return self._finish_failed(export, f"the lesson cannot be read: {error}")
        try:
            name = self._files.write(export.id, header, rows)
        except OSError as error:
            reason = f"the file could not be written: {error}"
            if export.attempts >= self._policy.max_attempts:
                reason = f"gave up after {export.attempts} attempts: {reason}"
                return self._finish_failed(export, reason)
            return Retry(self._policy.delay(export.attempts), reason)
        now = self._clock()
        return self._finish(
            export, lambda e: e.succeed(result_name=name, rows=len(rows), now=now)
        )

    def _check_age(self, export: Export, now: datetime) -> None:
        if self._age_limit is None:
            return
        age = (now - export.requested_at).total_seconds()
        if age > self._age_limit.max_age_s:
            self._age_limit.report(export.id, age)

    def _roster(self, export: Export) -> tuple[Sequence[str], list[Sequence[str]]]:
        """The seats as the request saw them, in the order they were taken."""
        try:
            lesson: object = self._app.repository.get(
                export.lesson_id, version=export.lesson_version
            )
        except AggregateNotFoundError:
            raise NotFoundError("lesson", export.lesson_id) from None
        if not isinstance(lesson, Lesson):
            raise NotFoundError("lesson", export.lesson_id)
        seats = list(lesson.seats.items())
        names = self._names.names([student_id for _, student_id in seats])
        rows: list[Sequence[str]] = [
            (str(enrollment_id), student_id, names.get(student_id, ""))
            for enrollment_id, student_id in seats
        ]
        return HEADER, rows

    def _finish_failed(self, export: Export, reason: str) -> Outcome:
        """Failed is an outcome the client reads, not a broker problem: ack it."""
        now = self._clock()
        return self._finish(export, lambda e: e.fail(reason=reason, now=now))

    def _finish(self, export: Export, step: Callable[[Export], None]) -> Outcome:
        """Record how it ended. A racing run of the same export (a redelivery
        while this one worked) may have recorded a step meanwhile: the outcome
        still holds (the same lesson version, the same file), so it is recorded
        on the fresh export; the first run to finish wins, the others see it."""
        for _ in range(FINISH_ATTEMPTS):
            if export.finished:
                return Done()
            step(export)
            if self._saved(export):
                return Done()
            export = self._app.get_export(export.id)
        return _raced(self._policy)

    def _saved(self, export: Export) -> bool:
        """False when a racing worker recorded a step first (its version won); the
        retry reads the export afresh and sees what that worker decided."""
        try:
            self._app.save(export)
        except IntegrityError:
            return False
        return True


def _raced(policy: RetryPolicy) -> Retry:
    """Another worker recorded a step first: read the export again, shortly."""
    return Retry(policy.delay(1), "another worker moved the export on")
