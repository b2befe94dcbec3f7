"""A deadline for a request's head, which uvicorn does not have.

uvicorn times out an idle kept-alive connection, but not a connection that sends
nothing, nor a head sent a byte at a time: a few hundred such clients (slowloris)
hold every one of `limit_concurrency`'s places for as long as they like. This
protocol is uvicorn's own httptools protocol with one deadline more, from when a
connection opens or a request's first byte arrives until its headers are
complete; past it, the client is answered `408` and the connection closed. The
body is not covered here: the API reads at most 64 KiB of it
(entrypoints/http/body_limit.py) within the request's deadline
(entrypoints/http/deadline.py).

uvicorn takes the class by its import path (`http=HEAD_DEADLINE_PROTOCOL`), which
also reaches the processes `CLUB_API_WORKERS` starts.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_DEADLINE_PROTOCOL = "entrypoints.runtime.head_deadline:HeadDeadlineProtocol"
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
)


class HeadDeadlineProtocol(HttpToolsProtocol):
    # Ten seconds is long for a head from any real client (a few hundred bytes),
    # and short enough that a connection's place is held at most that long.
    head_seconds: ClassVar[float] = 10.0
    _head_began: float | None = None  # when the head being read began (loop time)
    _head_timer: asyncio.TimerHandle | None = None

    # One timer per connection, moved on when it fires, not one armed and
    # cancelled per request: a request costs two attribute writes.

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_began = self.loop.time()  # a client that never sends a byte
        self._head_timer = self.loop.call_later(self.head_seconds, self._check_head)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_began is None:  # the next head on a kept-alive connection
            self._head_began = self.loop.time()

    def on_headers_complete(self) -> None:
        self._head_began = None
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)

    def _check_head(self) -> None:
        now, began = self.loop.time(), self._head_began
        if began is None or now - began < self.head_seconds:
            # Next when the head being read is due, or one that begins now.
            due = (now if began is None else began) + self.head_seconds
            self._head_timer = self.loop.call_at(due, self._check_head)
            return
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.write(TIMED_OUT)
            self.transport.close()
