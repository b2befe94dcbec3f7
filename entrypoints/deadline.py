"""Every request is answered within a deadline, even when the database is not.

A request already inside a read when PostgreSQL dies can wait the event-store
library's retries out (ten attempts, each bounded by the pool's wait): most of a
minute. Past the deadline the client gets 503 + Retry-After, the work carries on
in the background, and the Idempotency-Key recognises its outcome on the retry —
so answering early never loses or doubles an enrollment.
"""

from __future__ import annotations

import asyncio

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from entrypoints.problems import RETRY_AFTER_S, problem

log = structlog.get_logger()

DEFAULT_DEADLINE_S = 5.0


class Deadline:
    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds
        self._abandoned: set[asyncio.Task[None]] = set()  # strong refs until done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = abandoned = False

        async def send_unless_abandoned(message: Message) -> None:
            nonlocal started
            if not abandoned:
                started = True
                await send(message)

        task = asyncio.ensure_future(self.app(scope, receive, send_unless_abandoned))
        done, _ = await asyncio.wait({task}, timeout=self.seconds)
        if done or started:  # answered in time, or already answering
            await task
            return
        abandoned = True
        self._abandoned.add(task)
        task.add_done_callback(self._finished_late)
        path = scope.get("path", "")
        log.warning("http.deadline_exceeded", path=path, seconds=self.seconds)
        response = problem(
            503,
            "temporarily-unavailable",
            "Temporarily unavailable",
            f"no answer within {self.seconds:g}s; retry with the same Idempotency-Key",
            headers={"Retry-After": RETRY_AFTER_S},
        )
        await response(scope, receive, send)

    def _finished_late(self, task: asyncio.Task[None]) -> None:
        self._abandoned.discard(task)
        error = None if task.cancelled() else task.exception()
        log.info(
            "http.abandoned_request_finished", error=repr(error) if error else None
        )
