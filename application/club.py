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
from collections.abc import Sequence
from uuid import UUID

import attrs
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError
from eventsourcing.utils import EnvType

from application.commands import CancelEnrollment, EnrollStudent, ScheduleLesson
from application.errors import ContentionError, NotFoundError, UnknownStudentError
from application.group_commit import GroupCommit
from application.ids import enrollment_id_for
from application.ports import StudentDirectory
from domain.enrollment import Enrollment
from domain.errors import DomainError, EnrollmentCancelledError
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
        self._enrollments: GroupCommit[EnrollStudent, EnrollmentView] = GroupCommit(
            self._enroll_group
        )

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
        """Take a seat and confirm the enrollment in one transaction.

        Concurrent enrollments into the same lesson are saved together (group commit):
        a popular class costs one save per burst, not a storm of version conflicts.
        """
        if self.students is not None and self.students.get(cmd.student_id) is None:
            raise UnknownStudentError(cmd.student_id)
        return self._enrollments.submit(cmd.lesson_id, cmd)

    def _enroll_group(
        self, cmds: Sequence[EnrollStudent]
    ) -> list[EnrollmentView | BaseException]:
        """One lesson, many commands: each gets its own view or its own rule error."""
        lesson_id = cmds[0].lesson_id
        for attempt in range(MAX_ATTEMPTS):
            lesson = self.get_lesson(lesson_id)
            outcomes: list[EnrollmentView | BaseException] = []
            new: dict[UUID, Enrollment] = {}
            for cmd in cmds:
                outcomes.append(self._decide(lesson, cmd, new))
            try:
                if new:
                    self.save(lesson, *new.values())
            except IntegrityError:
                _back_off(attempt)  # another process moved the lesson on
                continue
            return outcomes
        raise ContentionError(f"lesson {lesson_id} is too busy, try again")

    def _decide(
        self, lesson: Lesson, cmd: EnrollStudent, new: dict[UUID, Enrollment]
    ) -> EnrollmentView | BaseException:
        enrollment_id = enrollment_id_for(cmd.lesson_id, cmd.request_id)
        earlier = new.get(enrollment_id) or self._find_enrollment(enrollment_id)
        if earlier is not None:
            return _view(earlier)  # our own earlier commit (its reply was lost)
        try:
            lesson.take_seat(enrollment_id=enrollment_id, student_id=cmd.student_id)
        except DomainError as rule:
            return rule
        new[enrollment_id] = Enrollment.confirm(
            enrollment_id=enrollment_id,
            lesson_id=cmd.lesson_id,
            student_id=cmd.student_id,
            request_id=cmd.request_id,
            lesson_starts_at=lesson.starts_at,
        )
        return _view(new[enrollment_id])

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
