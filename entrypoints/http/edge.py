"""What every HTTP request passes before a route, in one ASGI layer.

In order: the Host allowlist (CLUB_ALLOWED_HOSTS; a refusal names no request id),
the request id bound to the logs and echoed in `X-Request-ID`, the deadline
(`deadline.py`: past it the client gets 503 and the work carries on), and the body
limit (`body_limit.py`: 413 before anything parses the body). One layer reads the
headers once and wraps `send` once: as three wrapping middlewares they cost each
request three more coroutines and two more `send` wrappers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from uuid import uuid4

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars, reset_contextvars

from entrypoints.http.body_limit import MAX_BODY_BYTES, within_limit
from entrypoints.http.deadline import late_answer
from entrypoints.http.hosts import host_refused, serves
from entrypoints.http.request_context import HEADER, path_ids, well_formed

log = structlog.get_logger()


class _Exchange:
    """One request's answer: begun by the route, or given up at the deadline."""

    __slots__ = ("abandoned", "late", "started")

    def __init__(self) -> None:
        self.started = False
        self.abandoned = False
        self.late: asyncio.Task[None] | None = None  # the deadline's 503, sent


class Edge:
    def __init__(
        self,
        app: ASGIApp,
        *,
        deadline_seconds: float,
        allowed_hosts: Iterable[str] | None = None,
        body_limit: int = MAX_BODY_BYTES,
    ) -> None:
        """`allowed_hosts`: the names served (None: any, as a test's client sends)."""
        self.app = app
        self.seconds = deadline_seconds
        self.hosts = None if allowed_hosts is None else frozenset(allowed_hosts)
        self.limit = body_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = declared = given_id = None
        for name, value in scope["headers"]:  # the last Host and length count
            if name == b"host":
                host = value
            elif name == b"content-length":
                declared = value
            elif given_id is None and name.lower() == HEADER:
                given_id = value
        if self.hosts is not None and not serves(self.hosts, host or b""):
            await host_refused()(scope, receive, send)
            return
        request_id = well_formed(given_id) or uuid4().hex
        echoed = request_id.encode()
        exchange = _Exchange()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, value)
                    for name, value in message.get("headers", ())
                    if name.lower() != HEADER
                ]
                message = {**message, "headers": [*headers, (HEADER, echoed)]}
            await send(message)

        async def send_once(message: Message) -> None:
            """The route's answer, unless the deadline answered instead."""
            if not exchange.abandoned:
                exchange.started = True
                await send_with_id(message)

        def answer_late() -> None:
            if exchange.started:  # already answering: let it finish
                return
            exchange.abandoned = True
            path = scope.get("path", "")
            log.warning("http.deadline_exceeded", path=path, seconds=self.seconds)
            late = late_answer(scope, self.seconds)(scope, receive, send_with_id)
            exchange.late = asyncio.ensure_future(late)
            exchange.late.add_done_callback(_sent_late)

        # Reset by token, not by structlog's `bound_contextvars`, which reads
        # every context variable of the request to restore them.
        bound = bind_contextvars(request_id=request_id, **path_ids(scope["path"]))
        # The work runs here, in the server's task for the request; past the
        # deadline a timer answers 503 beside it and the work carries on (the
        # server counts it against its concurrency limit until it ends).
        timer = asyncio.get_running_loop().call_later(self.seconds, answer_late)
        try:
            await within_limit(
                self.app, scope, receive, send_once, limit=self.limit, declared=declared
            )
        except Exception as error:
            if not exchange.abandoned:
                raise
            # Its client has its answer; raised on, the server would close the
            # connection, which may already carry the client's next request.
            log.info("http.abandoned_request_finished", error=repr(error))
        else:
            if exchange.abandoned:
                log.info("http.abandoned_request_finished", error=None)
        finally:
            timer.cancel()
            reset_contextvars(**bound)
        if exchange.late is not None:  # work that ended just past the deadline:
            await asyncio.wait({exchange.late})  # the server wants a whole answer


def _sent_late(task: asyncio.Task[None]) -> None:
    """The 503's own failure (a client gone meanwhile) is logged, not lost."""
    error = None if task.cancelled() else task.exception()
    if error is not None:
        log.info("http.late_answer_not_sent", error=repr(error))
