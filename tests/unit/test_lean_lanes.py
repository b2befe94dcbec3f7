"""A lean route's request is answered in front of FastAPI as FastAPI would answer
it: its path parameters and route in the scope, its errors by the app's handlers,
a request handed back with its body intact (entrypoints/http/lean_lanes.py)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from fastapi.testclient import TestClient

from entrypoints.http.lean_lanes import LeanLanes
from entrypoints.http.lean_route import lean_route
from entrypoints.http.problems import install_error_handlers


class RefusedError(Exception):
    """An error the app has a handler of its own for."""


ASKED: list[str] = []  # what the lean function was asked, in order


async def lean(request: Request) -> Response | None:
    what = request.path_params["what"]
    ASKED.append(what)
    if what == "refused":
        raise RefusedError
    if what == "missing":
        raise HTTPException(404, "no such thing")
    if what == "bug":
        raise RuntimeError("a bug")
    if what == "hand-over":
        await request.body()  # read, then handed back: FastAPI must still get it
        return None
    return JSONResponse(
        {"lane": "lean", "what": what, "route": request.scope["route"].path}
    )


def generic(what: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"lane": "generic", "what": what, "body": body}


def app() -> LeanLanes:
    api = FastAPI()
    install_error_handlers(api)

    @api.exception_handler(RefusedError)
    async def refused(_: Request, __: Exception) -> Response:
        return JSONResponse({"refused": True}, status_code=409)

    router = APIRouter()
    router.add_api_route(
        "/things/{what}",
        generic,
        methods=["POST"],
        route_class_override=lean_route(lean),
    )
    api.include_router(router, prefix="/v1")
    return LeanLanes(api)


@pytest.fixture
def http() -> TestClient:
    return TestClient(app(), raise_server_exceptions=False)


def test_a_matching_request_is_answered_by_lean_with_its_route(http) -> None:
    answer = http.post("/v1/things/one", json={})
    assert answer.json() == {"lane": "lean", "what": "one", "route": "/things/{what}"}


def test_a_request_lean_hands_back_reaches_fastapi_with_its_body(http) -> None:
    ASKED.clear()
    answer = http.post("/v1/things/hand-over", json={"a": 1})
    assert answer.json() == {"lane": "generic", "what": "hand-over", "body": {"a": 1}}
    assert ASKED == ["hand-over"]  # once: the route's handler does not ask again


def test_another_method_or_path_goes_to_the_app(http) -> None:
    assert http.get("/v1/things/one").status_code == 405
    assert http.post("/things/one", json={}).status_code == 404


def test_an_error_with_a_handler_is_answered_by_it(http) -> None:
    answer = http.post("/v1/things/refused", json={})
    assert (answer.status_code, answer.json()) == (409, {"refused": True})
    missing = http.post("/v1/things/missing", json={})
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["detail"] == "no such thing"


def test_a_bug_is_answered_500_and_raised_on_for_the_server_to_log() -> None:
    quiet = TestClient(app(), raise_server_exceptions=False)
    answer = quiet.post("/v1/things/bug", json={})
    assert answer.status_code == 500
    assert answer.json()["type"] == "/problems/internal-error"
    with pytest.raises(RuntimeError, match="a bug"):
        TestClient(app()).post("/v1/things/bug", json={})
