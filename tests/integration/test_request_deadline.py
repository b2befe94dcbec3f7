"""Past the request deadline the client is answered 503 while the work goes on,
and what the work does after that never reaches the connection
(entrypoints/http/edge.py, behind a real server)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Message, Receive, Scope, Send

from entrypoints.http.edge import Edge
from tests.live_server import serving

DEADLINE_S = 1.0


@pytest.fixture
def work() -> list[str]:
    """What the routes' work did, in order."""
    return []


@pytest.fixture
def http(work: list[str]) -> Iterator[httpx.Client]:
    api = FastAPI()

    @api.get("/late")
    async def late(fails: bool = False) -> dict[str, str]:
        await asyncio.sleep(3 * DEADLINE_S)
        work.append("late work ended")
        if fails:
            raise RuntimeError("after the deadline")
        return {"too": "late"}

    @api.get("/quick")
    async def quick() -> dict[str, str]:
        await asyncio.sleep(0.8 * DEADLINE_S)
        work.append("quick work ended")
        return {"answered": "in time"}

    limits = httpx.Limits(max_connections=1)  # one kept-alive connection
    with (
        serving(Edge(api, deadline_seconds=DEADLINE_S)) as base,
        httpx.Client(base_url=base, limits=limits, timeout=30) as client,
    ):
        yield client


def test_the_deadline_answers_503_and_the_work_carries_on(http, work) -> None:
    started = time.monotonic()
    late = http.get("/late")
    waited = time.monotonic() - started
    assert late.status_code == 503, late.text
    assert late.json()["type"] == "/problems/temporarily-unavailable"
    assert DEADLINE_S <= waited < 2 * DEADLINE_S  # not when the work ended
    assert work == []
    time.sleep(3 * DEADLINE_S)
    assert work == ["late work ended"]


def test_abandoned_work_that_fails_never_closes_the_connection(http, work) -> None:
    assert http.get("/late", params={"fails": "true"}).status_code == 503
    # The connection's next request is in flight when the abandoned work raises
    # (3 deadlines in): a server told of that error would close the connection.
    time.sleep(1.6 * DEADLINE_S)  # 2.6 deadlines in; the next request ends at 3.4
    answer = http.get("/quick")
    assert answer.status_code == 200, answer.text
    assert work == ["late work ended", "quick work ended"]


def test_work_ending_while_the_503_is_sent_returns_after_it() -> None:
    """The server takes the app's return as the end of the answer: the 503 must
    be whole by then, even when the work ends while it is being sent."""
    sent: list[Message] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await asyncio.sleep(1.5 * DEADLINE_S)  # ends while the 503 is being sent
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"too late"})

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def slow_send(message: Message) -> None:
        await asyncio.sleep(DEADLINE_S)  # a slow client's socket
        sent.append(message)

    async def call() -> list[Message]:
        scope = {
            "type": "http", "method": "GET", "path": "/", "headers": [],
            "query_string": b"", "root_path": "",
        }  # fmt: skip
        await Edge(app, deadline_seconds=DEADLINE_S)(scope, receive, slow_send)
        return list(sent)

    answered = asyncio.run(call())
    assert [m["type"] for m in answered] == [
        "http.response.start",
        "http.response.body",
    ]
    assert answered[0]["status"] == 503
