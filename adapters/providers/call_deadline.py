"""A whole provider call bounded in time, not only each read of it.

A socket timeout bounds one silence. A provider (or something between) that drips
a byte just inside it — a header line every few seconds, a body a byte at a time
— is never silent long enough, and would hold a worker's slot for as long as it
likes. A call is therefore given a deadline when it takes its connection; past
it, the connection is shut down under the reader, which sees the provider hang
up (so the call ends as any cut answer does: its outcome unknown).

One watchdog thread per process serves every call: a thread per call would cost
more than the send itself.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time

import structlog

log = structlog.get_logger()
# A deadline that found no socket to shut (a name still resolving, a TLS
# connection being set up) is tried again this soon, until the call ends.
RETRY_S = 0.05


class Call:
    """One provider call: `attach` starts its clock with the connection it got,
    `reading` names the socket its answer comes from (http.client lets go of a
    connection's socket when the answer runs to the close: the answer holds it);
    `end` (always called) makes the watchdog forget it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.cut = False  # the deadline passed while the call was still running
        self._conn: object | None = None  # an http.client connection
        self._sock: socket.socket | None = None
        self._over = False
        self._lock = threading.Lock()

    def attach(self, conn: object) -> None:
        with self._lock:
            self._conn = conn
        _WATCHDOG.watch(time.monotonic() + self.seconds, self)

    def reading(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock

    def end(self) -> bool:
        """Whether the deadline cut the call. Called before the connection can
        serve another call: the watchdog must never reach that one."""
        with self._lock:
            self._over, self._conn, self._sock = True, None, None
            return self.cut

    def expire(self) -> None:
        """The watchdog's: the deadline passed."""
        with self._lock:
            if self._over or self._conn is None:
                return
            self.cut = True
            if self._shut():
                return
        _WATCHDOG.watch(time.monotonic() + RETRY_S, self)

    def _shut(self) -> bool:
        sock = getattr(self._conn, "sock", None) or self._sock
        # TLS inside TLS (an https proxy): urllib3's SSLTransport over the socket.
        sock = getattr(sock, "socket", sock)
        if not isinstance(sock, socket.socket):
            return False
        try:
            # socket.socket's own shutdown, also for TLS: SSLSocket's would drop
            # its SSL object under the reading thread.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:  # closed, or swapped for its TLS wrapper meanwhile
            return False
        return True


class _Watchdog:
    def __init__(self) -> None:
        self._due: list[tuple[float, int, Call]] = []
        self._order = itertools.count()  # ties: no Call comparison
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: float, call: Call) -> None:
        with self._cond:
            heapq.heappush(self._due, (deadline, next(self._order), call))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="provider-call-deadlines", daemon=True
                )
                self._thread.start()
            if self._due[0][2] is call:  # a sooner deadline than it sleeps for
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._due or self._due[0][0] > time.monotonic():
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    self._cond.wait(wait)
                _, _, call = heapq.heappop(self._due)
            try:
                call.expire()
            except Exception:  # a dead watchdog would leave every call unbounded
                log.exception("provider_call.deadline_failed")


_WATCHDOG = _Watchdog()
