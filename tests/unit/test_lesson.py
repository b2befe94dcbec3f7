"""The Lesson aggregate: given events, when a command, then new facts or an error."""

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID, uuid4

import hypothesis
import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent
from hypothesis import strategies as st

from domain.errors import (
    AlreadyEnrolledError,
    ControlCharacterError,
    InvalidLessonError,
    LessonFullError,
    PaidLessonError,
    SeatNotHeldError,
    TextLengthError,
)
from domain.lesson import Lesson
from tests.unit.given import given, replayed, when

STARTS = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
UNTIL = STARTS - timedelta(days=1)  # a hold's expiry


Step = Callable[[Lesson], object]  # a command: the fact it records is a given


def scheduled(capacity: int = 2, price_cents: int = 0) -> Callable[[], Lesson]:
    return lambda: Lesson.schedule(
        lesson_id=uuid4(),
        title="Yoga",
        capacity=capacity,
        starts_at=STARTS,
        price_cents=price_cents,
    )


def seat_taken(student: str, enrollment_id: UUID | None = None) -> Step:
    return lambda lesson: lesson.take_seat(
        enrollment_id=enrollment_id or uuid4(), student_id=student
    )


def seat_released(enrollment_id: UUID) -> Step:
    return lambda lesson: lesson.release_seat(enrollment_id=enrollment_id)


def seat_held(student: str, purchase_id: UUID | None = None) -> Step:
    return lambda lesson: lesson.hold_seat(
        purchase_id=purchase_id or uuid4(), student_id=student, until=UNTIL
    )


def hold_released(purchase_id: UUID) -> Step:
    return lambda lesson: lesson.release_hold(purchase_id=purchase_id)


def test_schedule_records_scheduled_with_its_facts() -> None:
    lesson_id = uuid4()
    lesson = Lesson.schedule(
        lesson_id=lesson_id,
        title=" Yoga ",
        capacity=3,
        starts_at=STARTS,
        price_cents=500,
    )
    [event] = lesson.collect_events()
    assert isinstance(event, Lesson.Scheduled)
    assert (event.originator_id, event.title, event.capacity) == (lesson_id, "Yoga", 3)
    assert event.starts_at == STARTS
    assert event.price_cents == 500


def at(year: int, hours: float = 0) -> datetime:
    return datetime(year, 6, 1, 10, 0, tzinfo=timezone(timedelta(hours=hours)))


@pytest.mark.parametrize(
    ("title", "capacity", "starts_at", "price"),
    [
        ("Yoga", 0, STARTS, 0),
        ("Yoga", 10_001, STARTS, 0),
        ("Yoga", 1, datetime(2026, 12, 1, 10, 0), 0),  # noqa: DTZ001 - naive on purpose
        ("Yoga", 1, STARTS, -1),
        ("Yoga", 1, STARTS, 100_000_001),
        ("Yoga", 1, STARTS, 10**30),
        ("Yoga", 1, at(1999), 0),
        ("Yoga", 1, at(9000), 0),
        ("Yoga", 1, at(9999, -5), 0),  # year 10000 in UTC: Python cannot load it
        ("Yoga", 1, at(1, 1), 0),  # year 0 in UTC
        ("Yoga", 1, at(2026, 16), 0),  # PostgreSQL refuses offsets from 16:00
        ("Yoga", 1, at(2026, -14.5), 0),
    ],
)
def test_schedule_refuses_out_of_bounds(title, capacity, starts_at, price) -> None:
    with pytest.raises(InvalidLessonError):
        Lesson.schedule(
            lesson_id=uuid4(), title=title, capacity=capacity, starts_at=starts_at,
            price_cents=price,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("title", "error"),
    [
        ("", TextLengthError),
        (" \u3000 ", TextLengthError),
        ("x" * 201, TextLengthError),
        ("Yo\u0000ga", ControlCharacterError),
        ("Yoga\n", ControlCharacterError),
    ],
)
def test_schedule_refuses_a_title_it_cannot_store(title, error) -> None:
    with pytest.raises(error):
        Lesson.schedule(
            lesson_id=uuid4(), title=title, capacity=1, starts_at=STARTS, price_cents=0
        )


@pytest.mark.parametrize(
    "starts_at", [at(2000, 14), at(8999, -14), at(2026, 5.75)], ids=str
)
def test_schedule_keeps_a_start_inside_the_window_as_written(starts_at) -> None:
    lesson = Lesson.schedule(
        lesson_id=uuid4(), title="Yoga", capacity=1, starts_at=starts_at,
        price_cents=100_000_000,
    )  # fmt: skip
    assert lesson.starts_at == starts_at
    assert lesson.starts_at.utcoffset() == starts_at.utcoffset()


def test_take_seat_records_seat_taken() -> None:
    lesson = given(scheduled())
    enrollment_id = uuid4()
    [event] = when(lesson, seat_taken("s-1", enrollment_id))
    assert isinstance(event, Lesson.SeatTaken)
    assert (event.enrollment_id, event.student_id) == (enrollment_id, "s-1")
    assert lesson.seats_taken == 1


def test_full_lesson_refuses_another_seat_and_records_nothing() -> None:
    lesson = given(scheduled(capacity=1), seat_taken("s-1"))
    with pytest.raises(LessonFullError):
        when(lesson, seat_taken("s-2"))
    assert lesson.collect_events() == []
    assert lesson.seats_taken == 1


def test_a_student_holds_at_most_one_seat() -> None:
    lesson = given(scheduled(), seat_taken("s-1"))
    with pytest.raises(AlreadyEnrolledError):
        when(lesson, seat_taken("s-1"))
    assert lesson.collect_events() == []


def test_release_frees_the_seat_for_someone_else() -> None:
    first = uuid4()
    lesson = given(
        scheduled(capacity=1), seat_taken("s-1", first), seat_released(first)
    )
    [event] = when(lesson, seat_taken("s-2"))
    assert isinstance(event, Lesson.SeatTaken)
    assert lesson.seats_taken == 1


def test_releasing_an_unknown_seat_records_nothing() -> None:
    lesson = given(scheduled())
    assert when(lesson, seat_released(uuid4())) == []


@hypothesis.given(
    capacity=st.integers(1, 5),
    commands=st.lists(st.tuples(st.booleans(), st.integers(0, 7)), max_size=40),
)
def test_seats_never_exceed_capacity_and_replay_equals_live(capacity, commands) -> None:
    lesson = scheduled(capacity)()
    held: dict[int, object] = {}
    for take, student in commands:
        if take:
            enrollment_id = uuid4()
            try:
                lesson.take_seat(enrollment_id=enrollment_id, student_id=f"s-{student}")
                held[student] = enrollment_id
            except (LessonFullError, AlreadyEnrolledError):
                pass
        elif student in held:
            lesson.release_seat(enrollment_id=held.pop(student))  # type: ignore[arg-type]
        assert lesson.seats_taken <= capacity
    replayed(lesson)  # asserts that the replay equals the live aggregate


def test_a_copied_lesson_takes_seats_without_touching_the_original() -> None:
    """The repository cache hands out deep copies; they must be independent."""
    import copy

    original = given(scheduled(capacity=3), seat_taken("s-1"))
    clone = copy.deepcopy(original)
    clone.take_seat(enrollment_id=uuid4(), student_id="s-2")
    assert (original.seats_taken, clone.seats_taken) == (1, 2)
    assert original.collect_events() == []
    assert len(clone.collect_events()) == 1
    assert (original.version, clone.version) == (2, 3)


def test_hold_seat_records_seat_held_and_counts_it() -> None:
    lesson = given(scheduled())
    purchase_id = uuid4()
    [event] = when(lesson, seat_held("s-1", purchase_id))
    assert isinstance(event, Lesson.SeatHeld)
    assert (event.purchase_id, event.student_id, event.until) == (
        purchase_id,
        "s-1",
        UNTIL,
    )
    assert (lesson.seats_held, lesson.seats_taken) == (1, 0)


def test_a_held_seat_is_not_taken_by_anyone_else() -> None:
    lesson = given(scheduled(capacity=1), seat_held("s-1"))
    with pytest.raises(LessonFullError):
        when(lesson, seat_taken("s-2"))
    with pytest.raises(LessonFullError):
        when(lesson, seat_held("s-3"))
    assert lesson.collect_events() == []


def test_a_student_with_a_hold_or_a_seat_gets_no_second_one() -> None:
    lesson = given(scheduled(capacity=3), seat_held("s-1"), seat_taken("s-2"))
    with pytest.raises(AlreadyEnrolledError):
        when(lesson, seat_taken("s-1"))
    with pytest.raises(AlreadyEnrolledError):
        when(lesson, seat_held("s-2"))
    assert lesson.collect_events() == []


def test_a_released_hold_frees_the_seat_and_releasing_twice_records_nothing() -> None:
    purchase_id = uuid4()
    lesson = given(
        scheduled(capacity=1), seat_held("s-1", purchase_id), hold_released(purchase_id)
    )
    assert when(lesson, hold_released(purchase_id)) == []
    when(lesson, seat_taken("s-2"))
    assert (lesson.seats_held, lesson.seats_taken) == (0, 1)


def test_convert_hold_turns_the_held_seat_into_a_taken_one() -> None:
    purchase_id, enrollment_id = uuid4(), uuid4()
    lesson = given(scheduled(capacity=1), seat_held("s-1", purchase_id))
    [event] = when(
        lesson,
        lambda lesson: lesson.convert_hold(
            purchase_id=purchase_id, enrollment_id=enrollment_id
        ),
    )
    assert isinstance(event, Lesson.HoldConverted)
    assert lesson.seats == {enrollment_id: "s-1"}
    assert (lesson.seats_held, lesson.seats_taken) == (0, 1)


def test_converting_a_hold_that_is_gone_is_refused() -> None:
    purchase_id = uuid4()
    lesson = given(
        scheduled(), seat_held("s-1", purchase_id), hold_released(purchase_id)
    )
    with pytest.raises(SeatNotHeldError):
        lesson.convert_hold(purchase_id=purchase_id, enrollment_id=uuid4())
    assert lesson.collect_events() == []


def test_a_copied_lesson_holds_seats_without_touching_the_original() -> None:
    import copy

    original = given(scheduled(capacity=3), seat_held("s-1"))
    clone = copy.deepcopy(original)
    clone.hold_seat(purchase_id=uuid4(), student_id="s-2", until=UNTIL)
    assert (original.seats_held, clone.seats_held) == (1, 2)


@hypothesis.given(
    capacity=st.integers(1, 4),
    commands=st.lists(
        st.tuples(st.sampled_from(["take", "hold", "release", "convert"]),
                  st.integers(0, 6)),
        max_size=40,
    ),
)  # fmt: skip
def test_taken_plus_held_never_exceed_capacity_and_replay_equals_live(
    capacity, commands
) -> None:
    lesson = scheduled(capacity)()  # free: a paid lesson's seats are only bought
    holds: dict[int, object] = {}
    for command, student in commands:
        try:
            if command == "take":
                lesson.take_seat(enrollment_id=uuid4(), student_id=f"s-{student}")
            elif command == "hold":
                purchase_id = uuid4()
                lesson.hold_seat(
                    purchase_id=purchase_id, student_id=f"s-{student}", until=UNTIL
                )
                holds[student] = purchase_id
            elif command == "release" and student in holds:
                lesson.release_hold(purchase_id=holds.pop(student))  # type: ignore[arg-type]
            elif command == "convert" and student in holds:
                lesson.convert_hold(
                    purchase_id=holds.pop(student),  # type: ignore[arg-type]
                    enrollment_id=uuid4(),
                )
        except (LessonFullError, AlreadyEnrolledError):
            pass
        assert lesson.seats_taken + lesson.seats_held <= capacity
    replayed(lesson)  # asserts that the replay equals the live aggregate


def test_a_paid_lessons_seat_is_bought_not_taken() -> None:
    """Enrolling in a paid lesson would give access without a captured payment."""
    paid = scheduled(capacity=3, price_cents=5_000)()
    with pytest.raises(PaidLessonError):
        paid.take_seat(enrollment_id=uuid4(), student_id="ann")
    assert paid.seats_taken == 0


def test_a_lesson_records_who_scheduled_it() -> None:
    lesson = Lesson.schedule(
        lesson_id=uuid4(), title="Yoga", capacity=3,
        starts_at=datetime(2027, 1, 1, tzinfo=UTC), price_cents=0, teacher_id="tess",
    )  # fmt: skip
    [scheduled] = lesson.collect_events()
    assert isinstance(scheduled, Lesson.Scheduled)
    assert scheduled.teacher_id == "tess"
    assert lesson.teacher_id == "tess"


def test_a_stored_v1_schedule_is_upcast_with_no_teacher() -> None:
    """Lessons scheduled before they recorded their teacher still load."""
    app = Application()
    lesson = Lesson.schedule(
        lesson_id=uuid4(), title="Yoga", capacity=3,
        starts_at=datetime(2027, 1, 1, tzinfo=UTC), price_cents=0, teacher_id="tess",
    )  # fmt: skip
    [scheduled] = lesson.collect_events()
    stored = app.mapper.to_stored_event(scheduled)
    state = json.loads(stored.state)
    assert state.pop("class_version") == 2
    del state["teacher_id"]  # exactly what a v1 event held
    as_v1 = StoredEvent(
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic,
        state=json.dumps(state).encode(),
    )
    loaded = app.mapper.to_domain_event(as_v1)
    assert isinstance(loaded, Lesson.Scheduled)
    assert loaded.teacher_id is None
    assert loaded.title == "Yoga"
