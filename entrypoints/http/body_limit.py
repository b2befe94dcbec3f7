"""Refuse request bodies over a limit before anything parses them.

The whole body (at most the limit) is read here first, then handed on. Counting
while the framework reads does not work for a chunked body: FastAPI's body parsing
catches whatever the counting raises and answers 400 instead of 413.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 64 * 1024


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        await within_limit(
            self.app, scope, receive, send, limit=self.limit, declared=declared
        )


async def within_limit(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    limit: int,
    declared: bytes | None,
) -> None:
    """`app` with the whole body read first, or 413 without calling it: at once
    when Content-Length says too much, else once the bytes read pass `limit`."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        await too_large(send, limit)
        return
    body = await read_within(receive, limit)
    if body is None:  # the client left: nobody to answer
        return
    if len(body) > limit:
        await too_large(send, limit)
        return
    await app(scope, replay(body, receive), send)


async def read_within(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or as soon as it is over `limit` what came so far; None
    when the client left before the end."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit or not message.get("more_body", False):
            return b"".join(chunks)


async def too_large(send: Send, limit: int) -> None:
    """413 as problem details; the connection closes (the rest is not read)."""
    body: dict[str, Any] = {
        "type": "/problems/content-too-large",
        "title": "Content Too Large",
        "status": 413,
        "detail": f"request bodies are limited to {limit} bytes",
    }
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def replay(body: bytes, receive: Receive) -> Receive:
    """The body in one message, then the real channel (to see a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
