"""The Club application: every use case on one event store; lessons, enrollments here.

Lessons, enrollments, purchases and exports share one `Application` because an
enrollment must commit in the same transaction as the lesson's seat (a purchase's
hold too), and eventsourcing makes one `save()` atomic only within one
application's recorder. The notification log of that recorder is the outbox the
relay reads. Every use case is a method of `ClubApplication`
(docs/decisions/2026-12-01-one-use-case-shape.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import attrs
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError
from eventsourcing.utils import EnvType

from application.club_store import MAX_ATTEMPTS, back_off, is_known
from application.commands import CancelEnrollment, EnrollStudent, ScheduleLesson
from application.errors import ContentionError, NotFoundError, UnknownStudentError
from application.exports import ExportUseCases
from application.group_commit import GroupCommit
from application.idempotency import (
    Answer,
    AnswerFor,
    KeyReusedError,
    Recorded,
    Request,
    RequestId,
    replay,
    request_id,
)
from application.ids import enrollment_id_for
from application.ports import AnswerStore, EnrollmentLookups, StudentDirectory
from application.webhook_receipt import WebhookUseCases
from domain.enrollment import Enrollment
from domain.errors import DomainError, EnrollmentCancelledError
from domain.lesson import Lesson


@attrs.frozen(kw_only=True)
class EnrollmentView:
    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    status: str
    version: int


@attrs.frozen
class _Enroll:
    """One enrollment in a group commit; `request` when it came with a key."""

    cmd: EnrollStudent
    request: Request | None = None
    answer_for: AnswerFor | None = None


# What one enrollment in a group commit ends with: its view, or, when it came with
# an Idempotency-Key, the answer stored for that key.
EnrollmentReply = EnrollmentView | Answer


def _view(enrollment: Enrollment) -> EnrollmentView:
    return EnrollmentView(
        enrollment_id=enrollment.id,
        lesson_id=enrollment.lesson_id,
        student_id=enrollment.student_id,
        status=enrollment.status,
        version=enrollment.version,
    )


class ClubApplication(WebhookUseCases, ExportUseCases):
    """Every use case of Club: lessons and enrollments here, purchases (and the
    payment webhook) and exports from their modules' base classes."""

    name = "Club"  # stored events live in table `club_events`

    def __init__(
        self,
        env: EnvType | None = None,
        *,
        students: StudentDirectory | None = None,
        answers: AnswerStore | None = None,
        lookups: EnrollmentLookups | None = None,
    ) -> None:
        super().__init__(env, students=students, answers=answers, lookups=lookups)
        self._enrollments: GroupCommit[_Enroll, EnrollmentReply] = GroupCommit(
            self._enroll_group
        )

    def schedule_lesson(self, cmd: ScheduleLesson) -> UUID:
        """Without a key: every call is a new lesson (the caller drew its id)."""
        self.save(Lesson.schedule(**attrs.asdict(cmd)))
        return cmd.lesson_id

    def schedule_lesson_once(
        self, cmd: ScheduleLesson, request: Request, answer_for: AnswerFor
    ) -> Answer:
        """With a key: the lesson and the answer commit together, once."""
        recorded = self._answers().find([request]).get(request_id(request))
        if recorded is not None:
            return replay(request, recorded)
        try:
            lesson = Lesson.schedule(**attrs.asdict(cmd))
        except DomainError as rule:
            return self._record_alone(request, answer_for(rule))
        answer = answer_for(lesson)
        if answer is None:
            raise ContentionError("the lesson could not be answered; try again")
        try:
            self.save(lesson, answers=[(request, answer)])
        except IntegrityError:  # a racing attempt with this key committed first
            recorded = self._answers().find([request]).get(request_id(request))
            if recorded is None:  # saved before answers were kept: answer afresh
                return self._record_alone(
                    request, answer_for(self.get_lesson(lesson.id))
                )
            return replay(request, recorded)
        return answer

    def enroll(self, cmd: EnrollStudent) -> EnrollmentView:
        """Take a seat and confirm the enrollment in one transaction.

        Concurrent enrollments into the same lesson are saved together (group commit):
        a popular class costs one save per burst, not a storm of version conflicts.
        """
        self._check_student(cmd.student_id)
        view = self._enrollments.submit(cmd.lesson_id, _Enroll(cmd))
        assert isinstance(view, EnrollmentView)  # noqa: S101 - no request, no answer
        return view

    def enroll_once(
        self, cmd: EnrollStudent, request: Request, answer_for: AnswerFor
    ) -> Answer:
        """`enroll` whose answer commits with the seat: a repeat of the request
        replays it, and a racing repeat is stopped by the key's uniqueness."""
        recorded, known = self._key_and_student(request, cmd.student_id)
        if recorded is not None:
            return replay(request, recorded)
        if not known:
            error = UnknownStudentError(cmd.student_id)
            return self._record_alone(request, answer_for(error))
        outcome = self._enrollments.submit(
            cmd.lesson_id, _Enroll(cmd, request, answer_for)
        )
        assert isinstance(outcome, Answer)  # noqa: S101 - a request gets an answer
        return outcome

    def _check_student(self, student_id: str) -> None:
        if not is_known(self.students, student_id):
            raise UnknownStudentError(student_id)

    def _enroll_group(
        self, group: Sequence[_Enroll]
    ) -> list[EnrollmentReply | BaseException]:
        """One lesson, many commands: each gets its own outcome or its own error.

        The requests' answers are saved with the seats. If the save fails on
        uniqueness, a racing attempt answered some of the keys (they replay its
        answer) or moved the lesson on (the rest try again on the new version).
        """
        lesson_id = group[0].cmd.lesson_id
        done: dict[int, EnrollmentReply | BaseException] = {}
        for attempt in range(MAX_ATTEMPTS):
            todo = [i for i in range(len(group)) if i not in done]
            items = [group[i] for i in todo]
            # The cached copy first (no read): a save of new events is checked by
            # the lesson's version anyway. What saves none — a refusal, a replay —
            # is checked by nothing, so it is decided again on the stored lesson.
            lesson = self._cached_lesson(lesson_id) if attempt == 0 else None
            unchecked = lesson is not None
            if lesson is not None:
                new, answers, outcomes = self._decide_group(lesson, items)
            if lesson is None or not new:
                lesson, unchecked = self.get_lesson(lesson_id), False
                new, answers, outcomes = self._decide_group(lesson, items)
            try:
                if new:
                    self.save(lesson, *new, answers=answers)
                    self._keep_warm(lesson)
                elif answers:
                    stored = self._answers().record(answers)
                    outcomes = _replayed(outcomes, items, stored)
            except IntegrityError:
                done |= self._resolve_race(items, todo)
                if unchecked:  # another process wrote the lesson: no race to wait out
                    self._found_stale(lesson_id)
                else:
                    back_off(attempt)
                continue
            done |= dict(zip(todo, outcomes, strict=True))
            return [done[i] for i in range(len(group))]
        raise ContentionError(f"lesson {lesson_id} is too busy, try again")

    def _decide_group(
        self, lesson: Lesson, group: Sequence[_Enroll]
    ) -> tuple[
        list[Enrollment],
        list[tuple[Request, Answer]],
        list[EnrollmentReply | BaseException],
    ]:
        """Decide every command on one copy of the lesson. A key sent twice in the
        group is decided once: the same body shares the outcome, another is refused."""
        new: dict[UUID, Enrollment] = {}
        answers: list[tuple[Request, Answer]] = []
        outcomes: list[EnrollmentReply | BaseException] = []
        first: dict[RequestId, tuple[Request, EnrollmentReply | BaseException]] = {}
        for item in group:
            if item.request is not None and request_id(item.request) in first:
                earlier, outcome = first[request_id(item.request)]
                if earlier.fingerprint != item.request.fingerprint:
                    outcome = KeyReusedError(item.request.key)
                outcomes.append(outcome)
                continue
            decided: EnrollmentView | BaseException = self._decide(
                lesson, item.cmd, new
            )
            outcome = decided
            refused = isinstance(decided, KeyReusedError)  # an error, never an answer
            if item.request is not None and item.answer_for is not None and not refused:
                answer = item.answer_for(decided)
                if answer is not None:
                    answers.append((item.request, answer))
                    outcome = answer
                first[request_id(item.request)] = (item.request, outcome)
            outcomes.append(outcome)
        return list(new.values()), answers, outcomes

    def _resolve_race(
        self, group: Sequence[_Enroll], indexes: Sequence[int]
    ) -> dict[int, EnrollmentReply | BaseException]:
        """After a failed save: the commands a racing attempt already answered, or
        already enrolled (before answers were kept). The rest are decided again."""
        requests = [item.request for item in group if item.request is not None]
        stored = self._answers().find(requests) if requests else {}
        resolved: dict[int, EnrollmentReply | BaseException] = {}
        for index, item in zip(indexes, group, strict=True):
            if item.request is not None and request_id(item.request) in stored:
                resolved[index] = _replay_or_error(
                    item.request, stored[request_id(item.request)]
                )
                continue
            earlier = self._find_enrollment(
                enrollment_id_for(item.cmd.lesson_id, item.cmd.request_id)
            )
            if earlier is not None and earlier.student_id == item.cmd.student_id:
                view = _view(earlier)
                answer = item.answer_for(view) if item.answer_for else None
                resolved[index] = answer if answer is not None else view
        return resolved

    def _decide(
        self, lesson: Lesson, cmd: EnrollStudent, new: dict[UUID, Enrollment]
    ) -> EnrollmentView | BaseException:
        enrollment_id = enrollment_id_for(cmd.lesson_id, cmd.request_id)
        if enrollment_id in new:
            return _view(new[enrollment_id])
        if enrollment_id in lesson.seats:  # our own earlier commit (its reply was lost)
            earlier = self.get_enrollment(enrollment_id)
            if earlier.student_id != cmd.student_id:
                return KeyReusedError(cmd.request_id)
            return _view(earlier)
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

    def _record_alone(self, request: Request, answer: Answer | None) -> Answer:
        """An answer that comes with no events: stored on its own."""
        if answer is None:
            raise ContentionError("the request could not be answered; try again")
        stored = self._answers().record([(request, answer)])
        return replay(request, stored[request_id(request)])

    def cancel_enrollment(self, cmd: CancelEnrollment) -> EnrollmentView:
        """Release the seat, and refund a bought one in the same save (decision of
        2026-12-02); cancelling twice is answered like the first time."""
        for attempt in range(MAX_ATTEMPTS):
            enrollment = self.get_enrollment(cmd.enrollment_id)
            lesson = self.get_lesson(enrollment.lesson_id)
            try:
                enrollment.cancel(reason=cmd.reason)
            except EnrollmentCancelledError:
                return _view(enrollment)
            lesson.release_seat(enrollment_id=enrollment.id)
            bought = self.bought_seat_of(enrollment)
            if bought is not None:  # its money goes back: the saga refunds it
                bought.refund_cancelled_seat(enrollment_id=enrollment.id, now=cmd.now)
            try:
                self.save(lesson, enrollment, *([bought] if bought else []))
            except IntegrityError:
                back_off(attempt)
                continue
            return _view(enrollment)
        raise ContentionError(f"enrollment {cmd.enrollment_id} is too busy, try again")

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


def _replay_or_error(request: Request, recorded: Recorded) -> Answer | BaseException:
    try:
        return replay(request, recorded)
    except KeyReusedError as error:
        return error


def _replayed(
    outcomes: list[EnrollmentReply | BaseException],
    group: Sequence[_Enroll],
    stored: dict[RequestId, Recorded],
) -> list[EnrollmentReply | BaseException]:
    """Each answer as it is stored: a racing attempt's may have come first."""
    return [
        _replay_or_error(item.request, stored[request_id(item.request)])
        if item.request is not None and request_id(item.request) in stored
        else outcome
        for item, outcome in zip(group, outcomes, strict=True)
    ]
