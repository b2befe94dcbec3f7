"""Lists come in pages (contract §4.1): `limit`, and a `next` link to follow until
there is none — every item once, in order, no request reading a table whole."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from application.commands import ScheduleLesson
from entrypoints.runtime.api import create_app
from projections import rosters, statistics
from tests.identity import ADMIN, VERIFIER


@pytest.fixture(scope="module")
def api(container) -> Iterator[TestClient]:
    with TestClient(create_app(container, verifier=VERIFIER), headers=ADMIN) as client:
        yield client


def _walk(api: TestClient, first: str, key: str) -> tuple[list[dict], int]:
    items, pages, url = [], 0, first
    while url:
        answer = api.get(url)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        items += body[key]
        pages += 1
        url = body["next"]
    return items, pages


def test_the_statistics_come_in_pages_with_totals_over_all(api, container) -> None:
    with container.engine.begin() as conn:
        statistics.metadata.create_all(conn)
        conn.execute(sa.delete(statistics.lessons))
        conn.execute(
            sa.insert(statistics.lessons),
            [
                {"lesson_id": uuid4(), "title": "Yoga", "capacity": 5, "confirmed": 2}
                for _ in range(7)
            ],
        )
    lessons, pages = _walk(api, "/statistics?limit=3", "lessons")
    assert pages == 3  # 3 + 3 + 1
    ids = [row["lesson_id"] for row in lessons]
    assert len(ids) == len(set(ids)) == 7
    assert ids == sorted(ids)
    whole = api.get("/statistics?limit=2").json()
    assert len(whole["lessons"]) == 2
    assert whole["totals"]["lessons"] == 7  # over every lesson, not the page
    assert whole["totals"]["enrollments_confirmed"] == 14


def test_a_roster_comes_in_pages_in_the_order_students_enrolled(api, container):
    lesson_id = container.app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(), title="Yoga", capacity=9,
            starts_at=datetime(2027, 1, 1, tzinfo=UTC), price_cents=0,
        )
    )  # fmt: skip
    start = datetime(2026, 12, 1, tzinfo=UTC)
    with container.engine.begin() as conn:
        rosters.metadata.create_all(conn)
        conn.execute(
            sa.insert(rosters.entries),
            [
                {
                    "enrollment_id": uuid4(),
                    "lesson_id": lesson_id,
                    "student_id": f"s-{i}",
                    "status": "confirmed",
                    "enrolled_at": None
                    if i == 0
                    else start + timedelta(seconds=i // 2),
                    "version": 1,
                }
                for i in range(9)
            ],
        )
    students, pages = _walk(api, f"/lessons/{lesson_id}/roster?limit=2", "students")
    assert pages == 5
    assert next(s["student_id"] for s in students) == "s-0"  # no time: first
    assert sorted(s["student_id"] for s in students) == [f"s-{i}" for i in range(9)]
    times = [s["enrolled_at"] for s in students[1:]]
    assert times == sorted(times)


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=1001",
        "limit=-1",
        "limit=x",
        "after=not-a-cursor",
        "after=" + "A" * 300,
        "after=Ti9h",
    ],
)
def test_a_bad_page_request_is_422(api, query: str) -> None:
    answer = api.get(f"/statistics?{query}")
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
