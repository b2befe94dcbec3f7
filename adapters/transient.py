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
import random

import eventsourcing.persistence as es
import nats.errors
import psycopg
import sqlalchemy.exc

from application.backoff import doubled
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
    """Exponential backoff with full jitter, reset after a success."""

    def __init__(self, first: float = 0.2, cap: float = 5.0) -> None:
        self._first, self._cap = first, cap
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    def next_delay(self) -> float:
        ceiling = doubled(self._first, self._attempt, self._cap)
        self._attempt += 1
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311

    async def wait(self) -> None:
        await asyncio.sleep(self.next_delay())
