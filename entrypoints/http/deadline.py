"""Every request is answered within a deadline, even when the database is not.

A request already inside a read when PostgreSQL dies can wait the event-store
library's retries out (ten attempts, each bounded by the pool's wait): most of a
minute. Past the deadline the client gets 503 + Retry-After, the work carries on
in the background, and the Idempotency-Key recognises its outcome on the retry —
so answering early never loses or doubles an enrollment. A write sent without a
key is told the truth instead: its outcome is unknown, and a blind retry could
repeat it.
"""

from __future__ import annotations

import asyncio

import structlog
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from entrypoints.http.problems import RETRY_AFTER_S, problem

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
        await _late_answer(scope, self.seconds)(scope, receive, send)

    def _finished_late(self, task: asyncio.Task[None]) -> None:
        self._abandoned.discard(task)
        error = None if task.cancelled() else task.exception()
        log.info(
            "http.abandoned_request_finished", error=repr(error) if error else None
        )


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _late_answer(scope: Scope, seconds: float) -> Response:
    """503, and what a retry would do: only a read or a keyed request is safe to
    repeat; a keyless write may still take effect in the background."""
    keyed = any(name == b"idempotency-key" for name, _ in scope.get("headers", ()))
    waited = f"no answer within {seconds:g}s"
    if scope.get("method") in SAFE_METHODS or keyed:
        advice = "retry with the same Idempotency-Key" if keyed else "retry"
        return problem(
            503,
            "temporarily-unavailable",
            "Temporarily unavailable",
            f"{waited}; {advice}",
            headers={"Retry-After": RETRY_AFTER_S},
        )
    return problem(
        503,
        "outcome-unknown",
        "Outcome unknown",
        f"{waited}. The request may still take effect: check before sending it "
        "again, or send an Idempotency-Key so that a retry is recognised",
    )
