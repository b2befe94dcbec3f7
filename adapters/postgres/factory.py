"""The event store's infrastructure: the library's PostgreSQL factory, plus the
connection settings Club gives every other connection (keepalives, a statement
timeout), which the library's settings do not reach."""

from __future__ import annotations

from eventsourcing.postgres import PostgresFactory
from eventsourcing.utils import Environment, EnvType

from adapters.postgres.database import KEEPALIVES, STATEMENT_TIMEOUT_S, server_options

STATEMENT_TIMEOUT = "CLUB_STATEMENT_TIMEOUT_SECONDS"  # "0": no limit


class ClubFactory(PostgresFactory):
    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        timeout = float(self.env.get(STATEMENT_TIMEOUT) or STATEMENT_TIMEOUT_S)
        kwargs = self.datastore.pool.kwargs
        assert isinstance(kwargs, dict)  # noqa: S101 - the library passes a dict
        # The pool opens on first use, so its connections are made with these.
        kwargs.update(
            KEEPALIVES, options=server_options(statement_timeout=timeout or None)
        )
