"""The lesson a group commit saved stays cached as saved: the next read decodes
none of its own events, and still reads every event another process wrote."""

from __future__ import annotations

from typing import Any

import pytest

from application.club import ClubApplication
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


@pytest.fixture
def two(container_for, migrated) -> tuple[Container, Container]:
    """Two API processes' containers on one database (each its own cache)."""
    first, second = container_for(migrated[0]), container_for(migrated[0])
    for n in range(3):
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
