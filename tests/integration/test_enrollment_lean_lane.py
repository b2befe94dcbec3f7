"""POST /lessons/{id}/enrollments answers a well-formed request without FastAPI's
generic solving, and hands anything else to FastAPI, whose answers stay the
route's contract (entrypoints/http/lean_route.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID, uuid4

import fastapi
import fastapi.routing
import pytest
from fastapi.testclient import TestClient

from entrypoints.http.rate_limit import CallerLimit
from entrypoints.runtime.api import create_app
from tests.api_client import ClubClient
from tests.identity import VERIFIER, as_student


@pytest.fixture(scope="module")
def api(container) -> Iterator[TestClient]:
    with TestClient(create_app(container, verifier=VERIFIER)) as client:
        yield client


@pytest.fixture(scope="module")
def club(api: TestClient) -> ClubClient:
    return ClubClient(api)


@pytest.fixture
def solved(monkeypatch) -> list[str]:
    """The paths FastAPI's generic handler solved parameters for, in order."""
    paths: list[str] = []
    generic = fastapi.routing.solve_dependencies

    async def counting(*, request: Any, **kw: Any) -> Any:
        paths.append(request.url.path)
        return await generic(request=request, **kw)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    return paths


@pytest.fixture
def routed(monkeypatch) -> list[str]:
    """The paths that reached FastAPI's own middleware stack and router."""
    paths: list[str] = []
    through = fastapi.FastAPI.__call__

    async def counting(self: Any, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            paths.append(scope["path"])
        await through(self, scope, receive, send)

    monkeypatch.setattr(fastapi.FastAPI, "__call__", counting)
    return paths


def post(
    api: TestClient,
    lesson: str,
    student: str,
    *,
    body: Any = None,
    headers: dict[str, str | None] | None = None,
    content: bytes | None = None,
) -> Any:
    """`student` enrolls itself with a fresh key; a header given as None is left
    out, `content` is sent as it is."""
    given = {"Idempotency-Key": str(uuid4()), **as_student(student)}
    if content is not None:
        given["content-type"] = "application/json"
    sent = {k: v for k, v in (given | (headers or {})).items() if v is not None}
    path = f"/lessons/{lesson}/enrollments"
    if content is None:
        json = {"student_id": student} if body is None else body
        return api.post(path, json=json, headers=sent)
    return api.post(path, content=content, headers=sent)


def test_a_well_formed_enrollment_is_answered_without_generic_solving(
    api, club, solved, routed
) -> None:
    lesson, ann = club.lesson(capacity=2), club.student()
    solved.clear()
    routed.clear()
    answer = post(api, lesson, ann)
    assert answer.status_code == 201, answer.text
    assert answer.json() == {
        "enrollment_id": answer.json()["enrollment_id"],
        "lesson_id": lesson,
        "student_id": ann,
        "status": "confirmed",
    }
    assert (
        answer.headers["location"] == f"/enrollments/{answer.json()['enrollment_id']}"
    )
    assert solved == routed == []  # answered in front of FastAPI (lean_lanes.py)
    invalid = post(api, lesson, ann, body={"student_id": ann, "extra": 1})
    assert invalid.status_code == 422
    path = f"/lessons/{lesson}/enrollments"
    assert solved == routed == [path]  # handed to FastAPI


def test_a_repeat_of_the_key_gets_the_first_answer_on_either_lane(api, club) -> None:
    lesson, ann = club.lesson(capacity=2), club.student()
    key = {"Idempotency-Key": str(uuid4())}
    first = post(api, lesson, ann, headers=key)
    # The same request handed over (FastAPI reads a `+json` media type as JSON,
    # the lean lane leaves it): the same key, body and caller, the same answer.
    media = {"content-type": "application/vnd.club+json"}
    again = post(api, lesson, ann, headers=key | media, content=_body(ann))
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()


# case -> how it differs from a well-formed request: (the lesson id as sent,
# what `post` is given), from the lesson, the student and the client.
Variant = Callable[[str, str, ClubClient], tuple[str, dict[str, Any]]]
VARIANTS: dict[str, Variant] = {
    "lesson id without hyphens": lambda lesson, _, __: (UUID(lesson).hex, {}),
    "media type with a charset": lambda lesson, ann, _: (lesson, {
        "headers": {"content-type": "application/json; charset=utf-8"},
        "content": _body(ann),
    }),
    "duplicate field, the last counts": lambda lesson, ann, _: (lesson, {
        "content": f'{{"student_id": "x", "student_id": "{ann}"}}'.encode(),
    }),
    "a field too many": lambda lesson, ann, _: (lesson, {
        "body": {"student_id": ann, "lesson_id": lesson},
    }),
    "student id with a newline": lambda lesson, ann, _: (lesson, {
        "body": {"student_id": f"{ann}\n"},
    }),
    "student id not a string": lambda lesson, _, __: (lesson, {
        "body": {"student_id": 7},
    }),
    "not JSON": lambda lesson, _, __: (lesson, {"content": b"{student_id: ann}"}),
    "text/plain": lambda lesson, ann, _: (lesson, {
        "headers": {"content-type": "text/plain"}, "content": _body(ann),
    }),
    "no key": lambda lesson, _, __: (lesson, {
        "headers": {"Idempotency-Key": None},
    }),
    "a key of 256 characters": lambda lesson, _, __: (lesson, {
        "headers": {"Idempotency-Key": "k" * 256},
    }),
    "not a UUID": lambda _, __, ___: ("lesson-1", {}),
    "another student's token": lambda lesson, _, club: (lesson, {
        "headers": as_student(club.student()),
    }),
    "no token": lambda lesson, _, __: (lesson, {"headers": {"Authorization": None}}),
    "no token and a bad body": lambda lesson, _, __: (lesson, {
        "headers": {"Authorization": None}, "body": {"student_id": 7},
    }),
}  # fmt: skip


@pytest.mark.parametrize(
    ("case", "status", "problem"),
    [
        ("lesson id without hyphens", 201, None),
        ("media type with a charset", 201, None),
        ("duplicate field, the last counts", 201, None),
        ("a field too many", 422, "validation-error"),
        ("student id with a newline", 422, "validation-error"),
        ("student id not a string", 422, "validation-error"),
        ("not JSON", 422, "validation-error"),
        ("text/plain", 422, "validation-error"),
        ("no key", 400, "idempotency-key-missing"),
        ("a key of 256 characters", 400, "invalid-idempotency-key"),
        ("not a UUID", 422, "validation-error"),
        ("another student's token", 403, "forbidden"),
        ("no token", 401, "invalid-token"),
        ("no token and a bad body", 401, "invalid-token"),
    ],
)
def test_every_other_request_is_answered_as_declared(
    api, club, case, status, problem
) -> None:
    ann = club.student()
    lesson, sent = VARIANTS[case](club.lesson(capacity=2), ann, club)
    answer = post(api, lesson, ann, **sent)
    assert answer.status_code == status, (case, answer.text)
    if problem is None:
        assert answer.json()["student_id"] == ann
        assert answer.json()["lesson_id"] == str(UUID(lesson))
    else:
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["type"] == f"/problems/{problem}"


def _body(student_id: str) -> bytes:
    return f'{{"student_id": "{student_id}"}}'.encode()


def test_a_lean_request_spends_the_callers_rate_once(container, club) -> None:
    app = create_app(container, verifier=VERIFIER, rate_limit=CallerLimit("2/minute"))
    lessons, ann = [club.lesson(capacity=1) for _ in range(3)], club.student()
    with TestClient(app) as api:
        answers = [post(api, lesson, ann) for lesson in lessons]
    assert [a.status_code for a in answers] == [201, 201, 429]
    assert answers[-1].headers["retry-after"]
