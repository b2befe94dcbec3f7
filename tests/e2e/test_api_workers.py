"""`club api` with CLUB_API_WORKERS=2: two processes on one port, and the popular
lesson still never oversold nor a retried request answered twice."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from uuid import uuid4

import httpx
import psutil
import pytest

from tests.api_client import ClubClient
from tests.identity import ADMIN
from tests.servers import scratch_dir
from tests.stack import Stack, eventually

CAPACITY = 12
ATTEMPTS = 40


@pytest.fixture(scope="module")
def two_workers(migrated: tuple[str, str]) -> Iterator[Stack]:
    stack = Stack(*migrated, scratch_dir("club-e2e-workers-"))
    stack.start("api", CLUB_API_WORKERS="2")
    yield stack
    stack.stop_all()


def serving_pids(stack: Stack) -> set[int]:
    """The processes holding connections to the API's port (its workers)."""
    parent = psutil.Process(stack.procs["api"].pid)
    return {
        child.pid
        for child in parent.children(recursive=True)
        if any(c.laddr and c.laddr.port == stack.port for c in child.net_connections())
    }


def test_two_worker_processes_serve_the_port(two_workers: Stack) -> None:
    # Each worker process answers on the shared socket (SO_REUSEPORT or inherited).
    eventually(lambda: len(serving_pids(two_workers)) == 2)
    assert httpx.get(f"{two_workers.base}/readyz").status_code == 200


def test_the_popular_lesson_is_never_oversold_across_processes(
    two_workers: Stack,
) -> None:
    with ClubClient(two_workers.base) as club:
        lesson_id = club.lesson(capacity=CAPACITY)
        students = [club.student() for _ in range(ATTEMPTS)]

    def enroll(student_id: str) -> int:
        # A connection per request: the kernel spreads them over both workers.
        with ClubClient(two_workers.base) as client:
            return client.enroll(lesson_id, student_id).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(enroll, students))
    assert sorted(set(codes)) == [201, 409], codes
    assert codes.count(201) == CAPACITY
    lesson = httpx.get(f"{two_workers.base}/lessons/{lesson_id}", headers=ADMIN).json()
    assert lesson["seats_taken"] == CAPACITY


def test_a_retry_on_another_connection_gets_the_first_answer(
    two_workers: Stack,
) -> None:
    key = str(uuid4())
    with ClubClient(two_workers.base) as club:
        lesson_id = club.lesson(capacity=3)
        student_id = club.student()
    answers = []
    for _ in range(6):  # new connections: some land on the other process
        with ClubClient(two_workers.base) as client:
            answers.append(client.enroll(lesson_id, student_id, key=key))
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["enrollment_id"] for a in answers}) == 1
    lesson = httpx.get(f"{two_workers.base}/lessons/{lesson_id}", headers=ADMIN).json()
    assert lesson["seats_taken"] == 1
