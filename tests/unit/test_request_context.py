"""The API's request context: X-Request-ID honoured or made, echoed, and bound."""

from __future__ import annotations

import asyncio
import re
from uuid import UUID, uuid4

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from starlette.types import Message
from structlog.contextvars import bind_contextvars, get_contextvars

from entrypoints.http.edge import Edge
from entrypoints.http.request_context import path_ids


def client() -> TestClient:
    """An app whose routes answer with the ids bound while they ran."""
    api = FastAPI()

    @api.get("/enrollments/{anything}")
    def sync_route(anything: str) -> dict[str, object]:  # runs in a thread
        return get_contextvars()

    @api.get("/async")
    async def async_route() -> dict[str, object]:
        return get_contextvars()

    return TestClient(Edge(api, deadline_seconds=5))


def test_a_request_without_an_id_gets_one_echoed_and_bound() -> None:
    with client() as http:
        first, second = http.get("/async"), http.get("/async")
    made = first.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    assert first.json() == {"request_id": made}
    assert second.headers["x-request-id"] != made  # one per request


def test_a_well_formed_id_is_honoured() -> None:
    with client() as http:
        shown = http.get("/async", headers={"X-Request-ID": "edge-7f3a.2:b_c"})
    assert shown.headers["x-request-id"] == "edge-7f3a.2:b_c"
    assert shown.json()["request_id"] == "edge-7f3a.2:b_c"


@pytest.mark.parametrize(
    "sent", ["ann@example.org", "two words", "x" * 129, "", "line\\tbreak"]
)
def test_a_malformed_id_is_replaced_not_echoed(sent: str) -> None:
    with client() as http:
        shown = http.get("/async", headers={"X-Request-ID": sent})
    assert shown.headers["x-request-id"] != sent
    assert re.fullmatch(r"[0-9a-f]{32}", shown.json()["request_id"])
    assert len(shown.headers.get_list("x-request-id")) == 1


def test_the_resource_named_in_the_path_is_bound_beside_it() -> None:
    enrollment = uuid4()
    with client() as http:
        named = http.get(f"/enrollments/{enrollment}")
        typed = http.get("/enrollments/ann@example.org")
    assert named.json()["enrollment_id"] == str(enrollment)
    assert set(typed.json()) == {"request_id"}  # not a UUID: not an id


def test_the_callers_own_context_is_as_it_was_after_a_request() -> None:
    """A client that calls the app in its own task (httpx's ASGI transport) keeps
    its bindings, and gets none of the request's."""
    enrollment = uuid4()
    api = FastAPI()

    @api.get("/enrollments/{anything}")
    async def seen(anything: str) -> dict[str, object]:
        return get_contextvars()

    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    async def call() -> dict[str, object]:
        bind_contextvars(request_id="the-callers", lesson_id="kept")
        scope = {
            "type": "http", "method": "GET", "path": f"/enrollments/{enrollment}",
            "headers": [], "query_string": b"", "root_path": "",
        }  # fmt: skip
        await Edge(api, deadline_seconds=5)(scope, receive, send)
        return get_contextvars()

    after = asyncio.run(call())
    assert after == {"request_id": "the-callers", "lesson_id": "kept"}
    assert sent[0]["status"] == 200
    assert b'"enrollment_id"' in sent[1]["body"]  # bound while the route ran


def test_path_ids_know_each_resource() -> None:
    some = str(uuid4())
    assert path_ids(f"/purchases/{some}") == {"purchase_id": some}
    assert path_ids(f"/operations/{some}") == {"operation_id": some}
    assert path_ids(f"/lessons/{some}/roster-exports") == {"lesson_id": some}
    assert path_ids(f"/students/{some}") == {}
    assert path_ids("/") == {}


SEGMENTS = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.uuids().map(lambda u: u.hex),
    st.uuids().map(lambda u: f"{{{u}}}"),
    st.text(max_size=40),
)


@given(SEGMENTS.filter(lambda segment: "/" not in segment))
def test_an_id_is_bound_in_its_canonical_form_or_not_at_all(segment: str) -> None:
    try:
        expected = {"lesson_id": str(UUID(segment))}
    except ValueError:
        expected = {}
    assert path_ids(f"/lessons/{segment}") == expected
