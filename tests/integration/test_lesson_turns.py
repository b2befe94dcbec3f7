"""API processes take turns per lesson: the next group reads what the last saved.

Each container has its own group commit, as separate processes do."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from uuid import UUID, uuid4

import pytest

from adapters.postgres.lesson_turns import AdvisoryLessonTurns
from application import club
from entrypoints.runtime import bootstrap
from tests.builders import enroll_command, profile, schedule_lesson


@pytest.fixture
def processes(migrated: tuple[str, str]) -> Iterator[list[bootstrap.Container]]:
    built = [
        bootstrap.build(migrated[0], pool_size=10, lesson_turns=True) for _ in range(2)
    ]
    yield built
    for container in built:
        container.close()


def held_by_two(
    turns: list[AdvisoryLessonTurns], lessons: tuple[UUID, UUID], hold: float
) -> dict[str, float]:
    """The first takes its turn and holds it `hold` s; the second asks meanwhile."""
    times: dict[str, float] = {}
    first_in = threading.Event()

    def first() -> None:
        with turns[0].turn(lessons[0]):
            times["first_in"] = time.monotonic()
            first_in.set()
            time.sleep(hold)
            times["first_out"] = time.monotonic()

    def second() -> None:
        first_in.wait(5)
        with turns[1].turn(lessons[1]):
            times["second_in"] = time.monotonic()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return times


def test_the_second_turn_on_a_lesson_waits_for_the_first(
    processes: list[bootstrap.Container],
) -> None:
    turns = [AdvisoryLessonTurns(c.engine) for c in processes]
    lesson = uuid4()
    times = held_by_two(turns, (lesson, lesson), hold=0.3)
    assert times["second_in"] >= times["first_out"]


def test_turns_on_other_lessons_never_wait(
    processes: list[bootstrap.Container],
) -> None:
    turns = [AdvisoryLessonTurns(c.engine) for c in processes]
    times = held_by_two(turns, (uuid4(), uuid4()), hold=1.0)
    assert times["second_in"] < times["first_out"]


def test_a_turn_not_had_in_time_is_gone_without(
    processes: list[bootstrap.Container],
) -> None:
    """A process whose connection went silent holds no one past the wait."""
    waiting = AdvisoryLessonTurns(processes[1].engine, wait_at_most=0.2)
    turns = [AdvisoryLessonTurns(processes[0].engine), waiting]
    lesson = uuid4()
    times = held_by_two(turns, (lesson, lesson), hold=2.0)
    assert times["first_in"] + 0.2 <= times["second_in"] < times["first_out"]


def test_two_processes_into_one_lesson_never_lose_the_version_check(
    processes: list[bootstrap.Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    races: list[int] = []
    monkeypatch.setattr(club, "back_off", races.append)  # a lost save backs off
    students = [f"turn-{uuid4().hex[:8]}" for _ in range(40)]
    for student in students:
        processes[0].students.save(profile(student))
    lesson_id = schedule_lesson(processes[0].app, capacity=40, title="Hot")
    start = threading.Barrier(len(students))

    def enroll(index: int) -> None:
        app = processes[index % 2].app
        start.wait()
        app.enroll(enroll_command(lesson_id, students[index], str(uuid4())))

    threads = [threading.Thread(target=enroll, args=(i,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert processes[0].app.get_lesson(lesson_id).seats_taken == 40
    assert races == []
