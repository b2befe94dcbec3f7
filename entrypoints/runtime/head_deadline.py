"""A deadline for a request's head, which uvicorn does not have.

uvicorn times out an idle kept-alive connection, but not a connection that sends
nothing, nor a head sent a byte at a time: a few hundred such clients (slowloris)
hold every one of `limit_concurrency`'s places for as long as they like. This
protocol is uvicorn's own httptools protocol with one timer more, armed when a
connection opens and when a request's first byte arrives, and disarmed when its
headers are complete; when it fires, the client is answered `408` and the
connection closed. The body is not covered here: the API reads at most 64 KiB
of it (entrypoints/http/body_limit.py) within the request's deadline
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
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a client that never sends a byte is cut as well

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_timer is None:  # the next head on a kept-alive connection
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(self.head_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.write(TIMED_OUT)
            self.transport.close()
