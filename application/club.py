"""The Club application: lessons and enrollments in one event store.

Lessons and enrollments share one `Application` because an enrollment must commit
in the same transaction as the lesson's seat, and eventsourcing makes one
`save()` atomic only within one application's recorder. The notification log of
that recorder is the outbox the relay reads.
"""

from __future__ import annotations

import contextlib
import random
import time
from uuid import UUID

import attrs
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError
from eventsourcing.utils import EnvType

from application.commands import CancelEnrollment, EnrollStudent, ScheduleLesson
from application.errors import ContentionError, NotFoundError, UnknownStudentError
from application.ids import enrollment_id_for
from application.ports import StudentDirectory
from domain.enrollment import Enrollment
from domain.errors import EnrollmentCancelledError
from domain.lesson import Lesson

MAX_ATTEMPTS = 50


@attrs.frozen(kw_only=True)
class EnrollmentView:
    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    status: str
    version: int


def _view(enrollment: Enrollment) -> EnrollmentView:
    return EnrollmentView(
        enrollment_id=enrollment.id,
        lesson_id=enrollment.lesson_id,
        student_id=enrollment.student_id,
        status=enrollment.status,
        version=enrollment.version,
    )


class ClubApplication(Application[UUID]):
    name = "Club"  # stored events live in table `club_events`

    def __init__(
        self,
        env: EnvType | None = None,
        *,
        students: StudentDirectory | None = None,
    ) -> None:
        super().__init__(env)
        self.students = students

    def schedule_lesson(self, cmd: ScheduleLesson) -> UUID:
        try:
            return self.get_lesson(cmd.lesson_id).id  # a retried request
        except NotFoundError:
            pass
        lesson = Lesson.schedule(
            lesson_id=cmd.lesson_id,
            title=cmd.title,
            capacity=cmd.capacity,
            starts_at=cmd.starts_at,
            price_cents=cmd.price_cents,
        )
        # A concurrent retry of the same request may have saved it first.
        with contextlib.suppress(IntegrityError):
            self.save(lesson)
        return lesson.id

    def enroll(self, cmd: EnrollStudent) -> EnrollmentView:
        """Take a seat and confirm the enrollment in one transaction."""
        enrollment_id = enrollment_id_for(cmd.lesson_id, cmd.request_id)
        if self.students is not None and self.students.get(cmd.student_id) is None:
            raise UnknownStudentError(cmd.student_id)
        for attempt in range(MAX_ATTEMPTS):
            existing = self._find_enrollment(enrollment_id)
            if existing is not None:
                return _view(existing)  # our own earlier commit, reply was lost
            lesson = self.get_lesson(cmd.lesson_id)
            lesson.take_seat(enrollment_id=enrollment_id, student_id=cmd.student_id)
            enrollment = Enrollment.confirm(
                enrollment_id=enrollment_id,
                lesson_id=cmd.lesson_id,
                student_id=cmd.student_id,
                request_id=cmd.request_id,
                lesson_starts_at=lesson.starts_at,
            )
            try:
                self.save(lesson, enrollment)
            except IntegrityError:
                _back_off(attempt)  # another writer moved the lesson on
                continue
            return _view(enrollment)
        raise ContentionError(f"lesson {cmd.lesson_id} is too busy, try again")

    def cancel_enrollment(self, cmd: CancelEnrollment) -> EnrollmentView:
        """Release the seat; cancelling twice is answered like the first time."""
        for attempt in range(MAX_ATTEMPTS):
            enrollment = self.get_enrollment(cmd.enrollment_id)
            lesson = self.get_lesson(enrollment.lesson_id)
            try:
                enrollment.cancel(reason=cmd.reason)
            except EnrollmentCancelledError:
                return _view(enrollment)
            lesson.release_seat(enrollment_id=enrollment.id)
            try:
                self.save(lesson, enrollment)
            except IntegrityError:
                _back_off(attempt)
                continue
            return _view(enrollment)
        raise ContentionError(f"enrollment {cmd.enrollment_id} is too busy, try again")

    def get_lesson(self, lesson_id: UUID) -> Lesson:
        try:
            lesson: object = self.repository.get(lesson_id)
        except AggregateNotFoundError:
            raise NotFoundError("lesson", lesson_id) from None
        if not isinstance(lesson, Lesson):
            raise NotFoundError("lesson", lesson_id)
        return lesson

    def get_enrollment(self, enrollment_id: UUID) -> Enrollment:
        enrollment = self._find_enrollment(enrollment_id)
        if enrollment is None:
            raise NotFoundError("enrollment", enrollment_id)
        return enrollment

    def view_enrollment(self, enrollment_id: UUID) -> EnrollmentView:
        return _view(self.get_enrollment(enrollment_id))

    def _find_enrollment(self, enrollment_id: UUID) -> Enrollment | None:
        try:
            enrollment: object = self.repository.get(enrollment_id)
        except AggregateNotFoundError:
            return None
        return enrollment if isinstance(enrollment, Enrollment) else None


def _back_off(attempt: int) -> None:
    """A jittered, growing pause: colliding writers spread out, not re-collide."""
    time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))  # noqa: S311
