"""The Club application on the in-memory (POPO) event store."""

from collections.abc import Iterator
from uuid import uuid4

import pytest

from adapters.memory.answers import InMemoryAnswerStore
from adapters.memory.students import InMemoryStudentDirectory
from adapters.postgres.answers import SqlAnswerStore
from adapters.postgres.database import create_engine, eventsourcing_env
from application.club import ClubApplication
from application.commands import CancelEnrollment, EnrollStudent
from application.errors import NotFoundError, UnknownStudentError
from application.idempotency import Answer, KeyReusedError, Request
from domain.errors import LessonFullError
from domain.lesson import Lesson
from entrypoints.runtime.bootstrap import migrate_database
from tests.builders import enroll_command, profile, schedule_lesson


@pytest.fixture(params=["popo", "postgres"])
def app(request: pytest.FixtureRequest) -> Iterator[ClubApplication]:
    """The same use cases in memory and on PostgreSQL."""
    students = InMemoryStudentDirectory()
    for n in range(5):
        students.save(profile(f"s-{n}"))
    if request.param == "popo":
        yield ClubApplication(students=students, answers=InMemoryAnswerStore())
        return
    url = request.getfixturevalue("database_url")
    migrate_database(url)
    engine = create_engine(url)
    app = ClubApplication(
        env=eventsourcing_env(url), students=students, answers=SqlAnswerStore(engine)
    )
    yield app
    # Closed here, not by the collector: `__del__` may run in one of the pool's
    # own threads, which cannot join itself (an unraisable error in a later test).
    app.close()
    engine.dispose()


def schedule(app: ClubApplication, capacity: int = 2) -> Lesson:
    return app.get_lesson(schedule_lesson(app, capacity=capacity))


def test_enroll_saves_seat_and_enrollment_in_one_notification_batch(app) -> None:
    lesson = schedule(app)
    before = app.recorder.max_notification_id() or 0
    view = app.enroll(
        EnrollStudent(lesson_id=lesson.id, student_id="s-1", request_id="k")
    )
    topics = [n.topic for n in app.notification_log.select(start=before + 1, limit=10)]
    assert topics == [
        "domain.lesson:Lesson.SeatTaken",
        "domain.enrollment:Enrollment.Confirmed",
    ]
    assert app.get_lesson(lesson.id).seats_taken == 1
    assert view.status == "confirmed"


def test_a_retried_request_finds_its_own_enrollment(app) -> None:
    lesson = schedule(app, capacity=1)
    cmd = EnrollStudent(lesson_id=lesson.id, student_id="s-1", request_id="k")
    first = app.enroll(cmd)
    again = app.enroll(cmd)  # the reply was lost; the lesson is now full
    assert again == first
    assert app.get_lesson(lesson.id).seats_taken == 1


def test_enroll_in_a_full_lesson_is_refused(app) -> None:
    lesson = schedule(app, capacity=1)
    app.enroll(EnrollStudent(lesson_id=lesson.id, student_id="s-1", request_id="a"))
    with pytest.raises(LessonFullError):
        app.enroll(EnrollStudent(lesson_id=lesson.id, student_id="s-2", request_id="b"))


def test_enroll_needs_a_profile_and_a_lesson(app) -> None:
    lesson = schedule(app)
    with pytest.raises(UnknownStudentError):
        app.enroll(
            EnrollStudent(lesson_id=lesson.id, student_id="nobody", request_id="a")
        )
    with pytest.raises(NotFoundError):
        app.enroll(EnrollStudent(lesson_id=uuid4(), student_id="s-1", request_id="a"))


def test_cancel_releases_the_seat_and_repeats_harmlessly(app) -> None:
    lesson = schedule(app, capacity=1)
    view = app.enroll(
        EnrollStudent(lesson_id=lesson.id, student_id="s-1", request_id="a")
    )
    cmd = CancelEnrollment(enrollment_id=view.enrollment_id)
    assert app.cancel_enrollment(cmd).status == "cancelled"
    version = app.get_enrollment(view.enrollment_id).version
    assert app.cancel_enrollment(cmd).status == "cancelled"
    assert app.get_enrollment(view.enrollment_id).version == version
    assert app.get_lesson(lesson.id).seats_taken == 0


def test_concurrent_enrollments_into_one_lesson_respect_capacity(app) -> None:
    """Forty threads, five seats: the group commit never oversells."""
    import threading

    lesson = schedule(app, capacity=5)
    for n in range(5, 40):
        app.students.save(profile(f"s-{n}"))
    outcomes: list[str] = []

    def enroll(n: int) -> None:
        cmd = enroll_command(lesson.id, f"s-{n}", f"k{n}")
        try:
            app.enroll(cmd)
            outcomes.append("confirmed")
        except LessonFullError:
            outcomes.append("full")

    threads = [threading.Thread(target=enroll, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["confirmed"] * 5 + ["full"] * 35
    assert app.get_lesson(lesson.id).seats_taken == 5


def answer_for(outcome: object) -> Answer:
    """A stand-in for the HTTP layer's mapping of outcomes to answers."""
    if isinstance(outcome, BaseException):
        return Answer(status_code=409, body={"refused": type(outcome).__name__})
    return Answer(status_code=201, body={"id": str(outcome.enrollment_id)})


def keyed(cmd: EnrollStudent) -> Request:
    return Request(scope="POST enroll", key=cmd.request_id, fingerprint=cmd.student_id)


def test_a_repeated_request_is_answered_as_the_first_time(app) -> None:
    lesson = schedule(app)
    cmd = enroll_command(lesson.id, "s-1", str(uuid4()))
    first = app.enroll_once(cmd, keyed(cmd), answer_for)
    again = app.enroll_once(cmd, keyed(cmd), answer_for)
    assert first == again
    assert first.status_code == 201
    assert app.get_lesson(lesson.id).seats_taken == 1


def test_the_same_key_for_another_student_is_refused(app) -> None:
    lesson = schedule(app)
    key = str(uuid4())
    cmd = enroll_command(lesson.id, "s-1", key)
    app.enroll_once(cmd, keyed(cmd), answer_for)
    other = enroll_command(lesson.id, "s-2", key)
    with pytest.raises(KeyReusedError):
        app.enroll_once(other, keyed(other), answer_for)
    assert app.get_lesson(lesson.id).seats_taken == 1


def test_a_refusal_is_replayed_even_after_a_seat_frees_up(app) -> None:
    lesson = schedule(app, capacity=1)
    taken = app.enroll(enroll_command(lesson.id, "s-0", str(uuid4())))
    cmd = enroll_command(lesson.id, "s-1", str(uuid4()))
    refused = app.enroll_once(cmd, keyed(cmd), answer_for)
    assert refused.body == {"refused": "LessonFullError"}
    app.cancel_enrollment(CancelEnrollment(enrollment_id=taken.enrollment_id))
    assert app.enroll_once(cmd, keyed(cmd), answer_for) == refused
