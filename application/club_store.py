"""The one event store every use case saves in, and what they all read from it.

`ClubApplication` is this store with every use case on it; each area's use cases
live in their own module as a base class of it (`purchases.py`, `exports.py`),
so one `save()` still commits a purchase, its lesson and its enrollment together.
"""

from __future__ import annotations

import copy
import time
from uuid import UUID

import attrs
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.utils import EnvType

from application.backoff import BackoffPolicy, Jitter
from application.errors import NotFoundError
from application.idempotency import Recorded, Request, request_id
from application.ports import AnswerStore, EnrollmentLookups, StudentDirectory
from domain.lesson import Lesson

MAX_ATTEMPTS = 50
# After a lesson's cached copy lost the version check (another process wrote it),
# its reads go to the store for this long: a copy that keeps losing costs a save.
CHECK_AFTER_STALE_S = 1.0
# Past this many lessons marked, the expired marks are dropped: a bounded map.
MAX_CHECKED = 1024
# A write that lost a race to another writer: 1 ms doubling to 50 ms, full jitter.
CONFLICT_RETRY = BackoffPolicy(first=0.001, cap=0.05, jitter=Jitter.FULL)


class ClubStore(Application[UUID]):
    def __init__(
        self,
        env: EnvType | None = None,
        *,
        students: StudentDirectory | None = None,
        answers: AnswerStore | None = None,
        lookups: EnrollmentLookups | None = None,
    ) -> None:
        """`lookups`: one answer to both reads before an enrollment (one round
        trip; the composition root may set it once the event store exists, for
        the store's own recorder to answer); else `answers` and `students`, a
        read each."""
        super().__init__(env)
        self.students = students
        self.answers = answers
        self.lookups = lookups
        self._checked_until: dict[UUID, float] = {}  # lessons found stale, until

    def get_lesson(self, lesson_id: UUID) -> Lesson:
        try:
            lesson: object = self.repository.get(lesson_id)
        except AggregateNotFoundError:
            raise NotFoundError("lesson", lesson_id) from None
        if not isinstance(lesson, Lesson):
            raise NotFoundError("lesson", lesson_id)
        return lesson

    def _cached_lesson(self, lesson_id: UUID) -> Lesson | None:
        """A copy of the lesson as this process last read or saved it, unchecked
        against the store (no round trip): None when it is not cached, or lost the
        version check within CHECK_AFTER_STALE_S. A save of what is decided on it
        is checked all the same, by the lesson's next version: one that another
        process took fails it (IntegrityError); see `_found_stale`."""
        cache = self.repository.cache
        if cache is None or self._checked_until.get(lesson_id, 0) > time.monotonic():
            return None
        try:
            cached = cache.get(lesson_id)
        except KeyError:
            return None
        return copy.deepcopy(cached) if isinstance(cached, Lesson) else None

    def _found_stale(self, lesson_id: UUID) -> None:
        """The cached copy lost the version check: read the store for a while."""
        now = time.monotonic()
        if len(self._checked_until) > MAX_CHECKED:  # forget the ones that expired
            self._checked_until = {
                key: until for key, until in self._checked_until.items() if until > now
            }
        self._checked_until[lesson_id] = now + CHECK_AFTER_STALE_S

    def _keep_warm(self, lesson: Lesson) -> None:
        """The lesson just saved replaces its cached copy: the next group decides
        on it (`_cached_lesson`), and a read fast-forwards it without decoding the
        events this save wrote. The library leaves the old copy when it
        fast-forwards: a caller may change an aggregate after saving it; the group
        commit never does. A newer version written meanwhile by another process is
        still read: the fast-forward asks for every version after the cached one."""
        if self.repository.cache is not None:
            self.repository.cache.put(lesson.id, lesson)

    def _answers(self) -> AnswerStore:
        if self.answers is None:
            raise RuntimeError("idempotent use cases need an AnswerStore")
        return self.answers

    def _key_and_student(
        self, request: Request, student_id: str
    ) -> tuple[Recorded | None, bool]:
        if self.lookups is not None:
            return self.lookups.key_and_student(request, student_id)
        return OneByOne(self._answers(), self.students).key_and_student(
            request, student_id
        )


@attrs.frozen
class OneByOne:
    """`EnrollmentLookups` over any AnswerStore and StudentDirectory, a read each."""

    answers: AnswerStore
    students: StudentDirectory | None

    def key_and_student(
        self, request: Request, student_id: str
    ) -> tuple[Recorded | None, bool]:
        recorded = self.answers.find([request]).get(request_id(request))
        return recorded, is_known(self.students, student_id)


def is_known(students: StudentDirectory | None, student_id: str) -> bool:
    """Whether a use case may act for this student: it has a profile (its e-mails
    need the address), or there is no directory and no use case checks one."""
    return students is None or students.get(student_id) is not None


def back_off(attempt: int) -> None:
    """A jittered, growing pause: colliding writers spread out, not re-collide.
    `attempt` counts from 0 (the attempt that just lost the race)."""
    time.sleep(CONFLICT_RETRY.delay(attempt + 1))
