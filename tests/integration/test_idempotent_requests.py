"""Two API processes racing one Idempotency-Key: the database picks one answer.

Each container has its own group commit, as separate processes do, so the race is
settled only by the key's uniqueness in the events' transaction."""

from __future__ import annotations

import threading
from uuid import UUID, uuid4

import pytest

from application.commands import EnrollStudent
from application.idempotency import Answer, KeyReusedError, Request
from entrypoints.runtime import bootstrap
from tests.builders import profile, schedule_lesson

ROUNDS = 20


def answer_for(outcome: object) -> Answer:
    if isinstance(outcome, BaseException):
        return Answer(status_code=409, body={"refused": type(outcome).__name__})
    return Answer(status_code=201, body={"id": str(outcome.enrollment_id)})


@pytest.fixture
def processes(migrated):
    built = [bootstrap.build(migrated[0], pool_size=2) for _ in range(2)]
    yield built
    for container in built:
        container.close()


def race(processes, lesson_id, students: list[str], key: str) -> list[object]:
    outcomes: list[object] = [None, None]
    start = threading.Barrier(2)

    def attempt(index: int) -> None:
        cmd = EnrollStudent(
            lesson_id=lesson_id, student_id=students[index], request_id=key
        )
        request = Request(scope="POST e", key=key, fingerprint=students[index])
        start.wait()
        try:
            outcomes[index] = processes[index].app.enroll_once(cmd, request, answer_for)
        except KeyReusedError as error:
            outcomes[index] = error

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes


def lesson(container) -> UUID:
    return schedule_lesson(container.app, capacity=50, title="Race")


def test_the_same_request_raced_is_one_seat_and_one_answer(processes) -> None:
    processes[0].students.save(profile("ann"))
    lesson_id = lesson(processes[0])
    for _ in range(ROUNDS):
        first, second = race(processes, lesson_id, ["ann", "ann"], str(uuid4()))
        assert isinstance(first, Answer)
        assert first == second
    assert processes[0].app.get_lesson(lesson_id).seats_taken == 1


def test_one_key_raced_for_two_students_has_one_winner(processes) -> None:
    for name in ("bo", "cy"):
        processes[0].students.save(profile(name, name=name))
    for _ in range(ROUNDS):
        lesson_id = lesson(processes[0])
        outcomes = race(processes, lesson_id, ["bo", "cy"], str(uuid4()))
        winners = [o for o in outcomes if isinstance(o, Answer)]
        assert len(winners) == 1, outcomes
        assert winners[0].status_code == 201
        assert sum(isinstance(o, KeyReusedError) for o in outcomes) == 1
        assert processes[1].app.get_lesson(lesson_id).seats_taken == 1
