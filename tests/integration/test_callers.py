"""Who may do what (contract §4.1), tried from outside the way an attacker would:
no token, a bad one, another student's, another teacher's — each refused with the
right status — and everything that works works with the right token."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import jwt
import pytest
from fastapi.testclient import TestClient

from entrypoints.http.rate_limit import CallerLimit
from entrypoints.runtime.api import create_app
from tests.api_client import STARTS_AT, ClubClient
from tests.identity import (
    ADMIN,
    TEST_AUTH_SECRET,
    VERIFIER,
    as_caller,
    as_student,
    as_teacher,
)

# Routes a caller reaches without a JWT: liveness, readiness, the API's own
# document, the payment webhook (its HMAC signature) and /ops (the operator).
OPEN = {"/healthz", "/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect",
        "/redoc", "/webhooks/payment", "/metrics"}  # fmt: skip
INVALID = 'Bearer error="invalid_token"'


@pytest.fixture(scope="module")
def api(container) -> Iterator[TestClient]:
    with TestClient(create_app(container, verifier=VERIFIER)) as client:
        yield client


@pytest.fixture(scope="module")
def club(api: TestClient) -> ClubClient:
    return ClubClient(api)


def _routes(api: TestClient) -> list[tuple[str, str]]:
    """Every route the API documents, its path parameters filled in."""
    fill = {"{lesson_id}": uuid4(), "{enrollment_id}": uuid4(),
            "{purchase_id}": uuid4(), "{operation_id}": uuid4(),
            "{student_id}": "ann"}  # fmt: skip
    found = []
    for template, operations in api.get("/openapi.json").json()["paths"].items():
        if template in OPEN or template.startswith("/ops"):
            continue
        path = template
        for name, value in fill.items():
            path = path.replace(name, str(value))
        found += [(method.upper(), path) for method in operations]
    return found


def test_every_callers_route_needs_a_token(api: TestClient) -> None:
    routes = _routes(api)
    assert len(routes) >= 13
    for method, path in routes:
        answer = api.request(method, path, json={}, headers={"Idempotency-Key": "k"})
        assert answer.status_code == 401, (method, path, answer.text)
        assert answer.headers["www-authenticate"] == INVALID
        assert answer.headers["content-type"] == "application/problem+json"


def _signed(claims: dict[str, Any], key: Any = TEST_AUTH_SECRET, alg: str = "HS256"):
    base = {
        "sub": "ann",
        "roles": ["admin"],
        "aud": "club",
        "exp": time.time() + 86_400,
    }
    return {"Authorization": f"Bearer {jwt.encode(base | claims, key, alg)}"}


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-jwt"},
        {"Authorization": "Basic YW5uOnB3"},
        {"Authorization": "Bearer " + "a" * 10_000},
        _signed({"exp": time.time() - 3600}),  # expired
        _signed({}, key="another-secret-another-secret-xx"),  # forged
        _signed({}, key=None, alg="none"),  # unsigned
        _signed({"aud": "another-service"}),
        _signed({"nbf": time.time() + 3600}),
        _signed({"exp": None}),
    ],
    ids=[
        "empty",
        "malformed",
        "basic",
        "huge",
        "expired",
        "forged",
        "none",
        "aud",
        "nbf",
        "no-exp",
    ],
)
def test_a_bad_token_is_refused_everywhere(api: TestClient, headers) -> None:
    answer = api.get("/statistics", headers=headers)
    assert answer.status_code == 401, answer.text
    assert answer.headers["www-authenticate"] == INVALID


def test_another_students_token_acts_for_nobody_else(club: ClubClient, api) -> None:
    ann, bob = club.student(), club.student()
    lesson = club.lesson(capacity=5)
    as_bob = as_student(bob)
    enrolled = club.enroll(lesson, ann)
    assert enrolled.status_code == 201, enrolled.text
    enrollment = enrolled.json()["enrollment_id"]
    # enroll, or take over the profile, of another student: 403
    other = {"Idempotency-Key": str(uuid4())} | as_bob
    refused = api.post(
        f"/lessons/{lesson}/enrollments", json={"student_id": ann}, headers=other
    )
    assert refused.status_code == 403
    hijack = {"email": "attacker@example.org", "name": "Ann"}
    assert api.put(f"/students/{ann}", json=hijack, headers=as_bob).status_code == 403
    # someone else's enrollment: not found, as one that never existed
    seen = api.get(f"/enrollments/{enrollment}", headers=as_bob)
    missing = api.get(f"/enrollments/{uuid4()}", headers=as_bob)
    assert seen.status_code == missing.status_code == 404
    assert seen.json()["title"] == missing.json()["title"]
    cancel = api.post(f"/enrollments/{enrollment}/cancel", headers=as_bob)
    assert cancel.status_code == 404
    mine = api.get(f"/enrollments/{enrollment}", headers=as_student(ann))
    assert mine.status_code == 200
    assert mine.json()["status"] == "confirmed"  # bob cancelled nothing
    assert api.get("/statistics", headers=as_bob).status_code == 403


def test_another_students_purchase_is_not_found(club: ClubClient, api) -> None:
    ann, bob = club.student(), club.student()
    lesson = club.paid_lesson()
    reserved = club.reserve(lesson, ann)
    assert reserved.status_code == 201, reserved.text
    purchase = reserved.json()["purchase_id"]
    assert api.get(f"/purchases/{purchase}", headers=as_student(bob)).status_code == 404
    assert api.get(f"/purchases/{purchase}", headers=as_student(ann)).status_code == 200
    other = {"Idempotency-Key": str(uuid4())} | as_student(bob)
    buy_for_ann = api.post(
        f"/lessons/{lesson}/purchases", json={"student_id": ann}, headers=other
    )
    assert buy_for_ann.status_code == 403
    # taking up an alternative for another student's purchase: not found
    elsewhere = {"lesson_id": club.paid_lesson()}
    path = f"/purchases/{purchase}/alternative"
    theirs = api.post(path, json=elsewhere, headers=as_student(bob))
    own = api.post(path, json=elsewhere, headers=as_student(ann))
    assert theirs.status_code == 404, theirs.text
    assert own.status_code == 409, own.text  # hers, with no alternative on offer


def test_a_student_cancels_only_her_own_seat(club: ClubClient, api) -> None:
    ann = club.student()
    enrolled = club.enroll(club.lesson(capacity=5), ann)
    enrollment = enrolled.json()["enrollment_id"]
    cancelled = api.post(f"/enrollments/{enrollment}/cancel", headers=as_student(ann))
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"


def test_a_lesson_and_its_roster_are_its_teachers(club: ClubClient, api) -> None:
    body = {"title": "Yoga", "capacity": 3, "starts_at": STARTS_AT}
    student = as_student("ann")
    assert api.post("/lessons", json=body, headers=student).status_code == 403
    tess, tom = as_teacher("tess"), as_teacher("tom")
    created = api.post("/lessons", json=body, headers=tess)
    assert created.status_code == 201, created.text
    lesson = created.json()["lesson_id"]
    assert api.get(f"/lessons/{lesson}", headers=student).status_code == 200
    assert api.get(f"/lessons/{lesson}/roster", headers=tom).status_code == 403
    assert api.get(f"/lessons/{lesson}/roster", headers=student).status_code == 403
    assert api.get(f"/lessons/{lesson}/roster", headers=tess).status_code == 200
    assert api.get(f"/lessons/{lesson}/roster", headers=ADMIN).status_code == 200
    export = f"/lessons/{lesson}/roster-exports"
    assert api.post(export, headers=tom).status_code == 403
    accepted = api.post(export, headers=tess)
    assert accepted.status_code == 202, accepted.text
    operation = accepted.headers["location"]
    assert api.get(operation, headers=tom).status_code == 404
    assert api.get(operation, headers=tess).status_code == 200
    assert api.get(f"{operation}/result", headers=tom).status_code == 404
    assert api.get(f"{operation}/result", headers=tess).status_code == 409  # pending
    assert api.get("/statistics", headers=tess).status_code == 403
    assert api.get("/statistics", headers=ADMIN).status_code == 200


def test_a_key_names_one_callers_request(club: ClubClient, api) -> None:
    """Another caller replaying a key is refused, never handed the first answer."""
    body = {"title": "Yoga", "capacity": 3, "starts_at": STARTS_AT}
    key = {"Idempotency-Key": str(uuid4())}
    first = api.post("/lessons", json=body, headers=key | as_teacher("tess"))
    again = api.post("/lessons", json=body, headers=key | as_teacher("tess"))
    other = api.post("/lessons", json=body, headers=key | as_teacher("tom"))
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert other.status_code == 422
    assert first.json()["lesson_id"] not in other.text


def test_unknown_roles_give_nothing(api) -> None:
    nobody = as_caller("mallory", "superuser", "root")
    assert api.get("/statistics", headers=nobody).status_code == 403


def test_a_burst_over_the_rate_is_429_for_that_caller_only(container) -> None:
    app = create_app(container, verifier=VERIFIER, rate_limit=CallerLimit("3/minute"))
    with TestClient(app) as api:
        tess, tom = as_teacher("tess"), as_teacher("tom")
        answers = [api.get(f"/lessons/{uuid4()}", headers=tess) for _ in range(4)]
        assert [a.status_code for a in answers] == [404, 404, 404, 429]
        assert 1 <= int(answers[-1].headers["retry-after"]) <= 60
        assert answers[-1].headers["content-type"] == "application/problem+json"
        assert api.get(f"/lessons/{uuid4()}", headers=tom).status_code == 404
        # bad tokens are counted against the address they came from
        bad = [api.get("/statistics", headers=_signed({"exp": 1})) for _ in range(4)]
        assert [a.status_code for a in bad] == [401, 401, 401, 429]


def test_only_the_apis_own_names_are_served(container) -> None:
    """DNS rebinding: a page's own name in Host is refused before anything runs."""
    app = create_app(
        container, verifier=VERIFIER, allowed_hosts=frozenset({"127.0.0.1"})
    )
    with TestClient(app, base_url="http://127.0.0.1:8000") as api:
        assert api.get("/healthz").status_code == 200
        for host in ("evil.example", "127.0.0.1.evil.example", "", "localhost.:80"):
            refused = api.get("/healthz", headers={"Host": host})
            assert refused.status_code == 400, host
            assert refused.json()["type"] == "/problems/host-not-allowed"
