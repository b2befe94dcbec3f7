"""Failures that pass: a broker or database restart, a lost reply, a timeout.

Long-running roles wait these out with a growing, jittered pause instead of dying;
anything else is a bug and is left to crash the process (the supervisor restarts it).
"""

from __future__ import annotations

import asyncio
import random

import nats.errors
import psycopg
import sqlalchemy.exc
from eventsourcing.persistence import PersistenceError

TRANSIENT: tuple[type[BaseException], ...] = (
    OSError,  # includes TimeoutError and connection resets
    psycopg.Error,
    sqlalchemy.exc.SQLAlchemyError,
    PersistenceError,
    nats.errors.Error,
)


class Backoff:
    """Exponential backoff with full jitter, reset after a success."""

    def __init__(self, first: float = 0.2, cap: float = 5.0) -> None:
        self._first, self._cap = first, cap
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    def next_delay(self) -> float:
        ceiling = min(self._cap, self._first * 2**self._attempt)
        self._attempt += 1
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311

    async def wait(self) -> None:
        await asyncio.sleep(self.next_delay())
