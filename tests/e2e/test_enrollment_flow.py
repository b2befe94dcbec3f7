"""From POST /lessons/{id}/enrollments to /statistics, through every real process."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from uuid import uuid4

import httpx
import psycopg
import pytest

from tests.api_client import ClubClient
from tests.identity import ADMIN
from tests.stack import eventually


@pytest.fixture
def club(api: str) -> Iterator[ClubClient]:
    with ClubClient(api) as client:
        yield client


def lesson_stats(api: str, lesson_id: str) -> dict | None:
    body = httpx.get(f"{api}/statistics", headers=ADMIN).json()
    return next((row for row in body["lessons"] if row["lesson_id"] == lesson_id), None)


def test_an_enrollment_reaches_the_statistics(api, club) -> None:
    lesson_id = club.lesson(capacity=3)
    response = club.enroll(lesson_id, club.student())
    assert response.status_code == 201
    assert response.json()["status"] == "confirmed"
    enrollment_id = response.json()["enrollment_id"]
    assert (
        httpx.get(f"{api}/enrollments/{enrollment_id}", headers=ADMIN).json()["status"]
        == "confirmed"
    )
    assert (
        httpx.get(f"{api}/lessons/{lesson_id}", headers=ADMIN).json()["seats_taken"]
        == 1
    )

    row = eventually(
        lambda: (
            (r := lesson_stats(api, lesson_id))
            and r["enrollments_confirmed"] == 1
            and r
        )
    )
    assert row["active_enrollments"] == 1
    assert httpx.get(f"{api}/statistics", headers=ADMIN).json()["last_applied_seq"] > 0

    cancel = httpx.post(f"{api}/enrollments/{enrollment_id}/cancel", headers=ADMIN)
    assert cancel.status_code == 200
    assert cancel.json()["status"] == "cancelled"
    assert (
        httpx.get(f"{api}/lessons/{lesson_id}", headers=ADMIN).json()["seats_taken"]
        == 0
    )
    eventually(
        lambda: (r := lesson_stats(api, lesson_id)) and r["enrollments_cancelled"] == 1
    )


def test_forty_students_race_for_five_seats(api, club) -> None:
    lesson_id = club.lesson(capacity=5)
    students = [club.student() for _ in range(40)]
    with ThreadPoolExecutor(40) as pool:
        responses = list(pool.map(lambda s: club.enroll(lesson_id, s), students))
    codes = sorted(r.status_code for r in responses)
    assert codes == [201] * 5 + [409] * 35
    for refused in (r for r in responses if r.status_code == 409):
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"] == "/problems/lesson-full"
    assert (
        httpx.get(f"{api}/lessons/{lesson_id}", headers=ADMIN).json()["seats_taken"]
        == 5
    )
    eventually(
        lambda: (r := lesson_stats(api, lesson_id)) and r["enrollments_confirmed"] == 5
    )


def test_the_same_key_replays_the_first_answer(api, club) -> None:
    lesson_id = club.lesson(capacity=1)
    student_id = club.student()
    first = club.enroll(lesson_id, student_id, key="key-replay")
    again = club.enroll(lesson_id, student_id, key="key-replay")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["location"] == first.headers["location"]
    assert (
        httpx.get(f"{api}/lessons/{lesson_id}", headers=ADMIN).json()["seats_taken"]
        == 1
    )


def test_the_same_key_with_another_body_is_422(api, club) -> None:
    lesson_id = club.lesson(capacity=2)
    club.enroll(lesson_id, club.student(), key="key-mismatch")
    other = club.enroll(lesson_id, club.student(), key="key-mismatch")
    assert other.status_code == 422
    assert other.json()["type"] == "/problems/idempotency-key-reused"


def test_the_same_key_sent_at_once_is_one_enrollment_and_one_answer(api, club) -> None:
    lesson_id = club.lesson(capacity=5)
    student_id = club.student()
    with ThreadPoolExecutor(8) as pool:
        responses = list(
            pool.map(
                lambda _: club.enroll(lesson_id, student_id, key="k-at-once"), range(8)
            )
        )
    assert {r.status_code for r in responses} == {201}, [r.text for r in responses]
    assert all(r.json() == responses[0].json() for r in responses)  # told the same
    assert (
        httpx.get(f"{api}/lessons/{lesson_id}", headers=ADMIN).json()["seats_taken"]
        == 1
    )


def test_the_same_key_raced_with_other_bodies_has_one_winner(api, club) -> None:
    lesson_id = club.lesson(capacity=5)
    students = [club.student() for _ in range(6)]
    with ThreadPoolExecutor(6) as pool:
        responses = list(
            pool.map(lambda s: club.enroll(lesson_id, s, key="k-contested"), students)
        )
    codes = sorted(r.status_code for r in responses)
    assert codes == [201] + [422] * 5, [r.text for r in responses]
    for refused in (r for r in responses if r.status_code == 422):
        assert refused.json()["type"] == "/problems/idempotency-key-reused"
    assert (
        httpx.get(f"{api}/lessons/{lesson_id}", headers=ADMIN).json()["seats_taken"]
        == 1
    )


JSON = {"content-type": "application/json"}
AT = {"starts_at": "2026-12-01T10:00:00Z"}
NAIVE = {"starts_at": "2026-12-01T10:00:00"}  # no time zone


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("GET", "/lessons/00000000-0000-0000-0000-000000000000", {}, 404),
        ("GET", "/lessons/not-a-uuid", {}, 422),
        ("GET", "/no/such/route", {}, 404),
        ("DELETE", "/statistics", {}, 405),
        ("POST", "/lessons", {"json": {"title": "x"}}, 422),
        ("POST", "/lessons", {"content": b"{not json", "headers": JSON}, 422),
        ("POST", "/lessons", {"json": {"title": "x", "capacity": 0, **AT}}, 422),
        ("POST", "/lessons", {"json": {"title": "x", "capacity": 1, **NAIVE}}, 422),
        ("POST", "/lessons", {"content": b"x" * (64 * 1024 + 1), "headers": JSON}, 413),
        ("PUT", "/students/s-1", {"json": {"email": "nope", "name": "Ann"}}, 422),
        ("PUT", "/students/bad%20id", {"json": {"email": "a@b.org", "name": "A"}}, 422),
        ("GET", "/enrollments/00000000-0000-0000-0000-000000000000", {}, 404),
        ("POST", "/enrollments/00000000-0000-0000-0000-000000000000/cancel", {}, 404),
    ],
)  # fmt: skip
def test_every_error_is_problem_details(api, method, path, kwargs, status) -> None:
    response = httpx.request(method, f"{api}{path}", **{"headers": ADMIN} | kwargs)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["title"]
    assert body["type"]


def test_a_chunked_body_over_64_kib_is_413_before_parsing(api) -> None:
    def chunks():  # no Content-Length: the server learns the size only by reading
        for _ in range(65):
            yield b" " * 1024
        yield b"{}"

    response = httpx.post(f"{api}/lessons", content=chunks(), headers=JSON | ADMIN)
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code == 413, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 413


def test_a_chunked_body_under_the_limit_is_parsed(api) -> None:
    body = json.dumps({"title": "Yoga", "capacity": 1, **AT}).encode()

    def chunks():
        yield b" " * (60 * 1024)  # whitespace is valid JSON padding
        yield body

    response = httpx.post(f"{api}/lessons", content=chunks(), headers=JSON | ADMIN)
    assert response.status_code == 201, response.text


def test_enrollment_errors_are_problem_details(api, club) -> None:
    lesson_id = club.lesson(capacity=1)
    missing_key = httpx.post(
        f"{api}/lessons/{lesson_id}/enrollments",
        json={"student_id": "s-1"},
        headers=ADMIN,
    )
    assert missing_key.status_code == 400
    assert missing_key.json()["type"] == "/problems/idempotency-key-missing"
    unknown = club.enroll(lesson_id, "never-registered")
    assert unknown.status_code == 422
    assert unknown.json()["type"] == "/problems/unknown-student"
    no_lesson = club.enroll(str(uuid4()), club.student())
    assert no_lesson.status_code == 404
    student_id = club.student()
    assert club.enroll(lesson_id, student_id).status_code == 201
    twice = club.enroll(lesson_id, student_id)
    assert twice.status_code == 409
    assert twice.json()["type"] == "/problems/already-enrolled"


def test_health_openapi_and_metrics(api) -> None:
    assert httpx.get(f"{api}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{api}/readyz").json()["checks"] == {
        "database": True,
        "nats": True,
    }
    spec = httpx.get(f"{api}/openapi.json").json()
    assert "/lessons/{lesson_id}/enrollments" in spec["paths"]
    # the API's metrics are on its metrics port, never the public one
    assert httpx.get(f"{api}/metrics", headers=ADMIN).status_code == 404


def test_a_stuck_lock_gives_503_with_retry_after_not_a_hang(
    api, club, migrated
) -> None:
    lesson_id = club.lesson(capacity=2)
    student_id = club.student()
    with psycopg.connect(migrated[0]) as blocker:
        blocker.execute("LOCK TABLE club_events IN EXCLUSIVE MODE")  # held until exit
        started = time.monotonic()
        stuck = club.enroll(lesson_id, student_id, key="key-stuck")
        waited = time.monotonic() - started
    assert stuck.status_code == 503
    assert stuck.headers["retry-after"]
    assert stuck.json()["type"] == "/problems/temporarily-unavailable"
    assert waited < 10
    retried = club.enroll(lesson_id, student_id, key="key-stuck")  # same key, later
    assert retried.status_code == 201
