"""Failures that pass: a broker or database restart, a lost reply, a timeout, a race.

Long-running roles wait these out with a growing, jittered pause instead of dying,
and the API answers them 503 + Retry-After. Only failures of the connection itself
(or a lock or a race that another attempt can win) belong here: an error in what a
statement *says* — text PostgreSQL refuses, a violated constraint, a bug — fails the
same way on every retry, so a consumer treats it as a poison event and anything else
lets it crash (the supervisor restarts it).
"""

from __future__ import annotations

import asyncio

import eventsourcing.persistence as es
import nats.errors
import psycopg
import sqlalchemy.exc

from application.backoff import BackoffPolicy, Jitter
from application.errors import ContentionError

TRANSIENT: tuple[type[Exception], ...] = (
    OSError,  # includes TimeoutError and connection resets
    # Lost or broken connections, lock and statement timeouts, serialization
    # failures and deadlocks, the pool's timeouts (psycopg_pool's are subclasses).
    psycopg.OperationalError,
    psycopg.InterfaceError,
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.InterfaceError,
    sqlalchemy.exc.DisconnectionError,
    sqlalchemy.exc.TimeoutError,  # no pooled connection within pool_timeout
    es.OperationalError,
    es.InterfaceError,
    nats.errors.Error,
    ContentionError,  # a concurrent writer won this time; the next attempt may not
)


def is_transient(error: BaseException) -> bool:
    return isinstance(error, TRANSIENT)


class Backoff:
    """The failures in a row of one loop, each waited out longer: equal jitter
    (drawn from [ceiling/2, ceiling]) under a ceiling that doubles from `first` up
    to `cap`; a success starts it afresh."""

    def __init__(self, first: float = 0.2, cap: float = 5.0) -> None:
        self._policy = BackoffPolicy(first=first, cap=cap, jitter=Jitter.EQUAL)
        self._failures = 0

    def reset(self) -> None:
        self._failures = 0

    def next_delay(self) -> float:
        self._failures += 1
        return self._policy.delay(self._failures)

    async def wait(self) -> None:
        await asyncio.sleep(self.next_delay())
