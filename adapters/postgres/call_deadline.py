"""Every database call bounded in time on our side, not only on the server's.

`statement_timeout` is enforced by the server, and TCP keepalives notice a peer
whose kernel went away. A server that accepts our bytes and never answers — a
stopped backend, a stuck pooler, a frozen VM — is alive at the TCP level: neither
ever fires, and a call on that connection would wait for ever, with the pooled
connection (and the thread) it holds. So every wait psycopg makes for the server
(a statement, a fetch, a pipeline's sync, a COMMIT, a ROLLBACK) is given a
deadline: the statement timeout plus a margin, so that a statement the server
cancels reports its own error first. Past the deadline the connection is closed
under the call, which fails with `DatabaseDeadlineError`; the pool sees a closed
connection and opens a fresh one (docs/decisions/2026-12-02-hung-database-calls.md).

A hung server rarely hangs one connection: every other idle connection to it,
in any pool of the process, is then suspect. Trying each would cost a deadline
apiece, so a connection not heard from since a call to its server was abandoned
is replaced when next taken from its pool (`suspect`), never tried. For the same
reason a call already waiting on that server for a second or more is cut at once
(its socket shut down), not left to its own deadline: requests that took hung
connections one after another would otherwise end one deadline after another.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg.abc import PQGen

RV = TypeVar("RV")
Server = tuple[str, int, str]  # host (or socket folder), port, database
# The server's own timeout (a 57014 error) is heard within this much of it.
MARGIN_S = 3.0
# psycopg's own: how often a wait wakes to notice a Ctrl-C.
WAIT_INTERVAL_S = 0.1
# A call waiting this long on a server that has just failed another is cut too:
# Club's statements answer in milliseconds, and a fresh connection's first call
# (the server may hang only some backends) is younger than this.
SIBLING_WAIT_S = 1.0


class DatabaseDeadlineError(psycopg.OperationalError):
    """The server did not finish a call within its deadline: the connection was
    closed, and whether a COMMIT sent on it took effect is unknown."""


def deadline_for(statement_timeout_s: float | None) -> float | None:
    """A call's deadline on connections whose statements have this limit; None
    (no statement limit: migrations) leaves calls unbounded."""
    return statement_timeout_s + MARGIN_S if statement_timeout_s else None


class BoundedConnection(psycopg.Connection[Any]):
    """A connection whose every wait for the server ends by `deadline_s`.

    `wait` is the one method through which psycopg runs each operation on an
    established connection (the cursor, the pipeline, COMMIT and ROLLBACK all
    call it), so bounding it bounds them all. A wait given its own timeout
    keeps it. Pooled connections only: they wait for answers, where a LISTEN
    connection waits for silence to end, and is not one of these.
    """

    deadline_s: ClassVar[float | None] = None
    # When a call to each server was last abandoned (monotonic), for every pool.
    _hung_at: ClassVar[dict[Server, float]] = {}
    # The calls waiting now, in every pool. Reentrant: a connection finalized by
    # the garbage collector inside the lock rolls back, which waits too.
    _waiting: ClassVar[set[_Call]] = set()
    _waiting_lock: ClassVar[threading.RLock] = threading.RLock()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answered_at = time.monotonic()  # it has just connected
        info = self.info
        self.server: Server = (info.host, info.port, info.dbname)

    def suspect(self) -> bool:
        """Not heard from since a call to its server was abandoned."""
        return self.answered_at < self._hung_at.get(self.server, -math.inf)

    def wait(
        self,
        gen: PQGen[RV],
        interval: float = WAIT_INTERVAL_S,
        timeout: float | None = None,
    ) -> RV:
        limit = self.deadline_s
        if timeout is not None or limit is None:
            return super().wait(gen, interval, timeout)
        began = time.monotonic()
        call = self._enter(began)
        try:
            answer = super().wait(gen, interval, limit)
        except psycopg.OperationalError as error:
            was_cut = self._leave(call)
            hung = time.monotonic() - began >= limit
            if was_cut or hung:
                # The protocol is cut mid-exchange: the connection can serve no
                # other call. Closing it (no round trip) is what the pools see.
                self.close()
            if not hung and (not was_cut or error.sqlstate is not None):
                raise  # it failed by itself, or the server answered an error
            if hung:
                self._abandoned_a_call()
                msg = (
                    f"the database did not answer within {limit:g} s (statement "
                    f"timeout + {MARGIN_S:g} s): its connection was closed"
                )
            else:
                msg = (
                    f"the database did not answer another call within {limit:g} s; "
                    f"this one, waiting too, was abandoned with it"
                )
            raise DatabaseDeadlineError(msg) from error
        except BaseException:
            self._leave(call)
            raise
        if self._leave(call):
            self.close()  # cut as its answer came: its socket is shut down
        self.answered_at = time.monotonic()
        return answer

    def _enter(self, began: float) -> _Call | None:
        """None: the process has no descriptor to spare. The call then goes
        unlisted — it cannot be cut, and still ends at its own deadline — rather
        than fail for a want of descriptors the call itself does not need."""
        try:
            fd = os.dup(self.pgconn.socket)
        except OSError:
            return None
        call = _Call(self.server, began, fd)
        with self._waiting_lock:
            self._waiting.add(call)
        return call

    def _leave(self, call: _Call | None) -> bool:
        """Whether the call was cut; once it has left, no one can cut it."""
        if call is None:
            return False
        with self._waiting_lock:
            self._waiting.discard(call)
        os.close(call.fd)
        return call.cut

    def _abandoned_a_call(self) -> None:
        """Marks the server hung and cuts every other call long waiting on it."""
        now = time.monotonic()
        self._hung_at[self.server] = now
        with self._waiting_lock:  # held: no call leaves, so its descriptor is open
            for call in list(self._waiting):
                if call.server == self.server and now - call.began >= SIBLING_WAIT_S:
                    call.cut = True
                    _shut_down(call.fd)


class _Call:
    """A call waiting on a server, with a duplicate of its socket's descriptor
    that the call owns until it leaves the list: a cut never reaches a descriptor
    libpq has closed (it does, on end-of-file) and the system has given again."""

    __slots__ = ("began", "cut", "fd", "server")

    def __init__(self, server: Server, began: float, fd: int) -> None:
        self.server = server
        self.began = began
        self.fd = fd
        self.cut = False


def _shut_down(fd: int) -> None:
    """Ends the connection for the thread waiting on it, which reads end-of-file.
    The descriptor stays the call's to close."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.detach()


def bounded_connection_class(deadline_s: float | None) -> type[BoundedConnection]:
    """The connection class for one pool: its calls end within `deadline_s`."""

    class PoolConnection(BoundedConnection):
        pass

    PoolConnection.deadline_s = deadline_s
    return PoolConnection


def suspect(conn: object) -> bool:
    """Whether a pooled connection (any driver's) must be replaced unasked."""
    return isinstance(conn, BoundedConnection) and conn.suspect()


def deadline_passed(error: BaseException) -> bool:
    """Whether `error`, or what caused it (the library wraps psycopg's), is a
    call abandoned at its deadline."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, DatabaseDeadlineError):
            return True
        seen = seen.__cause__
    return False
