"""Input the database cannot store is refused at the edge; odd but fine input flows.

Each refused case was accepted before (or failed later, deeper): a NUL reached the
event store and jammed the statistics projection, a year-10000 instant made the
roster answer 503 for good, a trailing newline passed the student-id check.
"""

from __future__ import annotations

import json
from uuid import uuid4

import httpx
import pytest

from tests.api_client import ClubClient
from tests.identity import ADMIN
from tests.stack import eventually

JSON = {"content-type": "application/json"}
LESSON = {"title": "Yoga", "capacity": 3, "starts_at": "2026-12-01T10:00:00Z"}


def post_lesson(api: str, **fields: object) -> httpx.Response:
    return httpx.post(f"{api}/lessons", json=LESSON | fields, timeout=30, headers=ADMIN)


def assert_problem(response: httpx.Response, status: int = 422) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["title"]
    return body


@pytest.mark.parametrize(
    "fields",
    [
        {"title": "Yo\u0000ga"},  # PostgreSQL text and jsonb refuse NUL
        {"title": "bell\u0007"},
        {"title": "next\u0085line"},  # a C1 control
        {"title": "two\u2028lines"},
        {"title": "tab\there"},
        {"title": "   "},  # blank once trimmed
        {"title": "\u3000"},  # an ideographic space is blank too
        {"title": "x" * 201},
        {"starts_at": "9999-12-31T23:00:00-05:00"},  # year 10000 in UTC
        {"starts_at": "0001-01-01T00:30:00+01:00"},  # year 0 in UTC
        {"starts_at": "1999-12-31T23:59:59Z"},
        {"starts_at": "2026-12-01T10:00:00-23:59"},  # PostgreSQL refuses beyond 15:59
        {"starts_at": "9000-01-01T00:00:00Z"},
        {"starts_at": 1_764_583_200},  # seconds since 1970: the schema says a string
        {"starts_at": "2026-12-01T10:00:00Z\n"},
        {"capacity": 10**30},
        {"capacity": "5"},
        {"capacity": True},
        {"price_cents": 10**30},
        {"price_cents": 100_000_001},
        {"price_cents": "0"},
    ],
    ids=repr,
)
def test_a_lesson_the_database_cannot_store_is_422(api, fields) -> None:
    assert_problem(post_lesson(api, **fields))


def test_a_lone_surrogate_is_422(api) -> None:
    # "\ud800" is valid JSON syntax and decodes to a str that UTF-8 cannot encode.
    body = json.dumps(LESSON | {"title": "@@"}).replace("@@", "\\ud800")
    response = httpx.post(f"{api}/lessons", content=body.encode(), headers=JSON | ADMIN)
    assert_problem(response)


@pytest.mark.parametrize(
    ("student_id", "profile"),
    [
        ("ann%0A", {"email": "ann@example.org", "name": "Ann"}),  # trailing newline
        ("ann", {"email": "ann\u0000@example.org", "name": "Ann"}),
        ("ann", {"email": "ann@example.org", "name": "A\u0000nn"}),
        ("ann", {"email": "ann@example.org", "name": "\u200a"}),
        ("ann", {"email": "ann@example.org\n", "name": "Ann"}),
        ("ann", {"email": "ann@@example.org", "name": "Ann"}),
        ("ann", {"email": "a" * 65 + "@example.org", "name": "Ann"}),
    ],
    ids=repr,
)
def test_a_student_the_database_cannot_store_is_422(api, student_id, profile) -> None:
    response = httpx.put(
        f"{api}/students/{student_id}", json=profile, timeout=30, headers=ADMIN
    )
    assert_problem(response)


def test_an_enrollment_for_a_student_id_with_a_newline_is_422(api) -> None:
    with ClubClient(api) as club:
        response = club.enroll(club.lesson(), "ann\n")
    assert_problem(response)


def test_a_too_long_idempotency_key_is_400(api) -> None:
    response = httpx.post(
        f"{api}/lessons", json=LESSON, headers={"Idempotency-Key": "k" * 256} | ADMIN
    )
    assert assert_problem(response, 400)["type"] == "/problems/invalid-idempotency-key"


def statistics_row(api: str, lesson_id: str) -> dict | None:
    body = httpx.get(f"{api}/statistics", timeout=10, headers=ADMIN).json()
    return next((r for r in body["lessons"] if r["lesson_id"] == lesson_id), None)


@pytest.mark.parametrize(
    ("fields", "stored_title"),
    [
        ({"title": "Cafe\u0301 ", "starts_at": "8999-12-31T23:59:59-14:00"}, "Café"),
        ({"title": "\u3000Tai chi 🧘\u200d♀️", "starts_at": "2000-01-01T00:00+14:00"},
         "Tai chi 🧘\u200d♀️"),
    ],
    ids=repr,
)  # fmt: skip
def test_odd_but_storable_input_reaches_both_read_models(
    api, fields, stored_title
) -> None:
    created = post_lesson(api, **fields)
    assert created.status_code == 201, created.text
    lesson_id = created.json()["lesson_id"]
    assert created.json()["title"] == stored_title  # NFC, trimmed
    student_id = f"s-{uuid4().hex[:8]}"
    profile = {"email": " ann@example.org ", "name": "Ann"}
    put = httpx.put(
        f"{api}/students/{student_id}", json=profile, timeout=30, headers=ADMIN
    )
    assert put.status_code == 200, put.text
    assert put.json()["email"] == "ann@example.org"
    with ClubClient(api) as club:
        enrolled = club.enroll(lesson_id, student_id)
    assert enrolled.status_code == 201, enrolled.text

    row = eventually(
        lambda: (r := statistics_row(api, lesson_id)) and r["enrollments_confirmed"]
    )
    assert row == 1
    assert statistics_row(api, lesson_id)["title"] == stored_title

    def roster() -> httpx.Response:
        return httpx.get(f"{api}/lessons/{lesson_id}/roster", timeout=10, headers=ADMIN)

    eventually(lambda: roster().status_code == 200 and roster().json()["students"])
    [entry] = roster().json()["students"]
    assert entry["student_id"] == student_id


def test_the_largest_price_and_a_whole_float_capacity_are_stored(api) -> None:
    created = post_lesson(api, title="Yoga", capacity=5.0, price_cents=100_000_000)
    assert created.status_code == 201, created.text
    lesson_id = created.json()["lesson_id"]
    assert (created.json()["capacity"], created.json()["price_cents"]) == (
        5,
        100_000_000,
    )
    with ClubClient(api) as club:
        refused = club.enroll(lesson_id, club.student())
    assert refused.status_code == 409  # a paid seat is bought, not enrolled in
    assert refused.json()["type"] == "/problems/paid-lesson"
    row = eventually(lambda: statistics_row(api, lesson_id))
    assert (row["capacity"], row["enrollments_confirmed"]) == (5, 0)
