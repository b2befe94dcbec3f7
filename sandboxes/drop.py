"""Drop a response on purpose: the connection closes and no HTTP answer is sent.

This is how a provider looks when it accepted a message and the network lost the
reply. ASGI has no way to abort a connection, so a route marks the request
(`mark_dropped`) and this middleware, outermost, aborts the server's transport in
place of sending the response. Raising in the app is not enough: uvicorn would
answer 500, which is a reply.
"""

from __future__ import annotations

import asyncio

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DROP = "club.sandbox.drop"


def mark_dropped(scope: Scope) -> None:
    scope[DROP] = True


class DropMarkedResponses:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        dropped = False

        async def send_unless_dropped(message: Message) -> None:
            nonlocal dropped
            if message["type"] == "http.response.start" and scope.get(DROP):
                dropped = True
                _abort(send)
            if not dropped:
                await send(message)

        await self.app(scope, receive, send_unless_dropped)
        if dropped:  # wait until the server saw the disconnect: it answers nothing
            while (await receive())["type"] != "http.disconnect":
                await asyncio.sleep(0)


def _abort(send: Send) -> None:
    # uvicorn's `send` is a method of its request cycle, which holds the transport.
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if not isinstance(transport, asyncio.WriteTransport):
        raise RuntimeError("cannot drop a response: the server's transport is hidden")
    transport.abort()


def serve(app: ASGIApp, host: str, port: int) -> None:
    """Run a sandbox on the asyncio loop and h11, whose transport `_abort` can close
    (uvloop's is no `asyncio.WriteTransport`). A sandbox is not where Club's speed
    is, so it keeps the plain stack the API left for uvloop and httptools."""
    uvicorn.run(
        app, host=host, port=port, log_level="warning", loop="asyncio", http="h11"
    )
