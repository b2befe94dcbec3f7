"""The lesson a group commit saved stays cached as saved. The next enrollment
decides on that copy without reading the store: a seat it takes is checked by the
lesson's next version, which another process's write has taken; a refusal, which
saves no event, is decided again on the stored lesson."""

from __future__ import annotations

from typing import Any

import pytest

from application import club_store
from application.club import ClubApplication
from application.commands import CancelEnrollment
from domain.errors import LessonFullError
from entrypoints.runtime.bootstrap import Container
from tests.builders import enroll_command, profile, schedule_lesson


class DecodeCounter:
    """The application's mapper, counting the stored events it decodes."""

    def __init__(self, app: ClubApplication) -> None:
        self.decoded = 0
        mapper = app.mapper
        decode = mapper.to_domain_event

        def counting(stored: Any) -> Any:
            self.decoded += 1
            return decode(stored)

        mapper.to_domain_event = counting  # type: ignore[method-assign]


class ReadCounter:
    """The application's recorder, counting the reads of one aggregate's events."""

    def __init__(self, app: ClubApplication, aggregate_id: object) -> None:
        self.reads = 0
        recorder = app.recorder
        select = recorder.select_events

        def counting(originator_id: object, *args: Any, **kwargs: Any) -> Any:
            self.reads += originator_id == aggregate_id
            return select(originator_id, *args, **kwargs)

        recorder.select_events = counting  # type: ignore[method-assign]


@pytest.fixture
def two(container_for, migrated) -> tuple[Container, Container]:
    """Two API processes' containers on one database (each its own cache)."""
    first, second = container_for(migrated[0]), container_for(migrated[0])
    for n in range(4):
        first.students.save(profile(f"warm-{n}"))
    return first, second


def test_the_next_read_decodes_none_of_the_saved_events(two) -> None:
    app = two[0].app
    lesson_id = schedule_lesson(app, capacity=5)
    app.enroll(enroll_command(lesson_id, "warm-0", "k-0"))
    counter = DecodeCounter(app)
    assert app.get_lesson(lesson_id).seats_taken == 1
    assert counter.decoded == 0


def test_another_process_s_seat_is_still_counted(two) -> None:
    first, second = two[0].app, two[1].app
    lesson_id = schedule_lesson(first, capacity=2)
    first.enroll(enroll_command(lesson_id, "warm-0", "k-1"))  # cached as saved
    second.enroll(enroll_command(lesson_id, "warm-1", "k-2"))  # the last seat
    with pytest.raises(LessonFullError):
        first.enroll(enroll_command(lesson_id, "warm-2", "k-3"))
    assert first.get_lesson(lesson_id).seats_taken == 2


def test_a_warm_lesson_is_not_read_before_a_seat_is_taken(two) -> None:
    app = two[0].app
    lesson_id = schedule_lesson(app, capacity=5)
    app.enroll(enroll_command(lesson_id, "warm-0", "k-4"))  # read, then cached
    counter = ReadCounter(app, lesson_id)
    app.enroll(enroll_command(lesson_id, "warm-1", "k-5"))
    assert counter.reads == 0
    assert two[1].app.get_lesson(lesson_id).seats_taken == 2


def test_a_stale_copy_loses_the_version_check_and_the_lesson_is_read(
    two, monkeypatch
) -> None:
    monkeypatch.setattr(club_store, "CHECK_AFTER_STALE_S", 600.0)
    first, second = two[0].app, two[1].app
    lesson_id = schedule_lesson(first, capacity=4)
    first.enroll(enroll_command(lesson_id, "warm-0", "k-6"))
    second.enroll(enroll_command(lesson_id, "warm-1", "k-7"))  # first's copy: stale
    counter = ReadCounter(first, lesson_id)
    first.enroll(enroll_command(lesson_id, "warm-2", "k-8"))
    assert counter.reads == 1  # after the failed save, not before it
    first.enroll(enroll_command(lesson_id, "warm-3", "k-9"))
    assert counter.reads == 2  # found stale: read first for a while
    stored = second.get_lesson(lesson_id)
    assert sorted(stored.seats.values()) == ["warm-0", "warm-1", "warm-2", "warm-3"]


def test_a_refusal_on_a_stale_copy_is_decided_again_on_the_stored_lesson(
    two,
) -> None:
    first, second = two[0].app, two[1].app
    lesson_id = schedule_lesson(first, capacity=1)
    taken = first.enroll(enroll_command(lesson_id, "warm-0", "k-10"))  # full, cached
    second.cancel_enrollment(CancelEnrollment(enrollment_id=taken.enrollment_id))
    view = first.enroll(enroll_command(lesson_id, "warm-1", "k-11"))
    assert view.student_id == "warm-1"
    assert second.get_lesson(lesson_id).seats_taken == 1
