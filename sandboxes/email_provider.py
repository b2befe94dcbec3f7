"""What the e-mail sandbox does with a send, apart from HTTP routing: the knobs,
the idempotency record and the rate limit."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import quote

from fastapi.responses import JSONResponse, Response
from starlette.types import Scope

from entrypoints.http.problems import problem
from sandboxes.drop import mark_dropped
from sandboxes.email_knobs import EMAIL_KNOBS
from sandboxes.email_request import SendRequest
from sandboxes.knobs import KnobBoard
from sandboxes.rate_limit import WINDOW_S, SlidingWindow, retry_after_header
from sandboxes.store import MessageStore, StoredMessage


class EmailSandbox:
    def __init__(
        self, data_dir: Path, knobs: Mapping[str, object], clock: Callable[[], float]
    ) -> None:
        """Raises `KnobError` for a bad knob, before anything listens."""
        self.knobs = KnobBoard(EMAIL_KNOBS, knobs)
        self.store = MessageStore(data_dir)
        self._clock = clock
        # The limit holds across a restart too: the last second's sends still count.
        self._window = SlidingWindow(self.store.accepted_since(clock() - WINDOW_S))
        self._dice = random.Random()  # noqa: S311 - fault injection, not secrets

    async def refusal(self) -> Response | None:
        """What `down` and `latency_ms` do to every provider request."""
        if self.knobs["down"]:
            return problem(503, "provider-down", "Provider down", "knob down=true")
        if self.knobs["latency_ms"]:
            await asyncio.sleep(self.knobs["latency_ms"] / 1000)
        return None

    def send(self, scope: Scope, wanted: SendRequest) -> Response:
        if self._dice.random() < self.knobs["fail_rate"]:
            status = self.knobs["fail_status"]
            return problem(
                status, "injected-failure", "Injected failure",
                f"knob fail_rate: answered {status} and accepted nothing",
            )  # fmt: skip
        first = self.store.find(wanted.key)
        if first is None:
            return self._accept(scope, wanted)
        if first.fingerprint != wanted.fingerprint:
            return problem(
                422, "idempotency-key-reused", "Idempotency-Key reused",
                "this key was used with another message; use a new key",
            )  # fmt: skip
        return self._answer(scope, first, replayed=True)

    def _accept(self, scope: Scope, wanted: SendRequest) -> Response:
        # Synchronous from the check to the commit: no other send interleaves.
        now = self._clock()
        limit = self.knobs["rate_limit_per_s"]
        wait = self._window.wait_before(now, limit)
        if wait > 0:
            return problem(
                429, "rate-limited", "Too Many Requests",
                f"the limit is {limit} accepted sends per second",
                headers={"Retry-After": retry_after_header(wait)},
                retry_after_ms=math.ceil(wait * 1000),
            )  # fmt: skip
        message = self.store.accept(
            key=wanted.key, fingerprint=wanted.fingerprint, recipient=wanted.to,
            subject=wanted.subject, body=wanted.body, accepted_at=now,
        )  # fmt: skip
        self._window.record(now)
        return self._answer(scope, message, replayed=False)

    def _answer(
        self, scope: Scope, message: StoredMessage, *, replayed: bool
    ) -> Response:
        if self._dice.random() < self.knobs["drop_rate"]:
            mark_dropped(scope)  # stored already; only the reply is lost
        return JSONResponse(
            message.as_json(),
            status_code=201,
            headers={
                "Location": f"/messages/{quote(message.idempotency_key, safe='')}",
                "Idempotent-Replayed": "true" if replayed else "false",
            },
        )
