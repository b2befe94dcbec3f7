"""The event store's infrastructure: the library's PostgreSQL factory, plus the
connection settings Club gives every other connection (keepalives, a statement
timeout), which the library's settings do not reach."""

from __future__ import annotations

import random
from typing import Any

from eventsourcing.postgres import ConnectionPool, PostgresFactory
from eventsourcing.utils import Environment, EnvType
from psycopg_pool.pool import AddConnection, MaintenanceTask

from adapters.postgres.call_deadline import (
    bounded_connection_class,
    deadline_for,
    suspect,
)
from adapters.postgres.database import KEEPALIVES, STATEMENT_TIMEOUT_S, server_options

STATEMENT_TIMEOUT = "CLUB_STATEMENT_TIMEOUT_SECONDS"  # "0": no limit
CONNECT_TIMEOUT_S = 5  # as every other connection (database.create_engine)
RECONNECT_EVERY_S = 1.0  # at most this long between a lost pool's tries


class ReconnectSoonPool(ConnectionPool[Any]):
    """The library's pool, trying again about each RECONNECT_EVERY_S while the
    server is away. psycopg_pool doubles the wait between tries (1, 2, 4, 8... s):
    after an outage of 8 s the event store came back 5.6-6.9 s after the server
    (two runs); after a minute's outage it could be a minute more of 503s.
    And a connection not heard from since a call to its server hung is never
    handed out (docs/decisions/2026-12-02-hung-database-calls.md)."""

    def schedule_task(self, task: MaintenanceTask, delay: float) -> None:
        if isinstance(task, AddConnection):  # jittered: the tries of one check()
            ceiling = RECONNECT_EVERY_S * random.uniform(0.5, 1.0)  # noqa: S311
            delay = min(delay, ceiling)  # do not all knock in the same instant
        super().schedule_task(task, delay)

    def getconn(self, timeout: float | None = None) -> Any:
        """A connection not heard from since a call to its server hung is not
        tried (that would cost a deadline): the pool is drained, and the caller
        waits for a fresh one."""
        conn = super().getconn(timeout)
        if suspect(conn):
            self.drain()  # the idle ones closed, the ones in use on their return
            conn.close()
            self.putconn(conn)  # closed: the pool opens one in its place
            conn = super().getconn(timeout)
        return conn


class ClubFactory(PostgresFactory):
    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        timeout = float(self.env.get(STATEMENT_TIMEOUT) or STATEMENT_TIMEOUT_S)
        kwargs = self.datastore.pool.kwargs
        assert isinstance(kwargs, dict)  # noqa: S101 - the library passes a dict
        # The pool opens on first use, so its connections are made with these.
        kwargs.update(
            KEEPALIVES,
            connect_timeout=CONNECT_TIMEOUT_S,  # psycopg's own default: 130 s
            options=server_options(statement_timeout=timeout or None),
        )
        # The pool is made by the library (unopened): it becomes ours before use.
        self.datastore.pool.__class__ = ReconnectSoonPool
        # Its connections' calls end by a deadline (a hung server is abandoned).
        self.datastore.pool.connection_class = bounded_connection_class(
            deadline_for(timeout)
        )
