"""Idempotency keys (IETF httpapi draft): replay the first answer, refuse misuse.

A key is claimed with a short lease. A request that dies mid-way leaves the claim
to expire; its retry then runs again, and the use case itself recognises a commit
that already happened (the request id is recorded in the event).

These rows are a cache of answers, not the record of what happened (the event store
is), so they commit without waiting for their WAL flush (`synchronous_commit = off`):
visibility and locking are unchanged, and a database crash can lose only the last
fraction of a second of claims and answers, after which a retry runs again and finds
its enrollment. A durable enrollment's claim is durable too: its commit flushes all
WAL written before it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import idempotency_keys as keys


@attrs.frozen
class Started:
    """This request owns the key: run it, then `complete` or `release`."""


@attrs.frozen
class Replay:
    status_code: int
    body: Any
    headers: dict[str, str]


@attrs.frozen
class Mismatch:
    """The key was used before with another request body."""


@attrs.frozen
class InFlight:
    """The first request with this key is still running."""


Claim = Started | Replay | Mismatch | InFlight


class IdempotencyStore:
    def __init__(self, engine: sa.Engine, *, lease_seconds: float = 10.0) -> None:
        self._engine = engine
        self._lease = timedelta(seconds=lease_seconds)

    def begin(self, scope: str, key: str, fingerprint: str) -> Claim:
        lease_until = sa.func.now() + self._lease
        where = (keys.c.scope == scope) & (keys.c.key == key)
        with self._engine.begin() as conn:
            _no_flush_wait(conn)
            claimed = conn.execute(
                insert(keys)
                .values(
                    scope=scope,
                    key=key,
                    fingerprint=fingerprint,
                    state="in_flight",
                    lease_until=lease_until,
                )
                .on_conflict_do_nothing()
                .returning(keys.c.key)
            ).first()
            if claimed is not None:
                return Started()
            row = conn.execute(
                sa.select(keys, (keys.c.lease_until < sa.func.now()).label("expired"))
                .where(where)
                .with_for_update()
            ).one()
            if row.fingerprint != fingerprint:
                return Mismatch()
            if row.state == "done":
                return Replay(row.status_code, row.response, dict(row.headers or {}))
            if not row.expired:
                return InFlight()
            conn.execute(sa.update(keys).where(where).values(lease_until=lease_until))
            return Started()  # the first attempt died; this retry takes over

    def complete(
        self,
        scope: str,
        key: str,
        status_code: int,
        body: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        with self._engine.begin() as conn:
            _no_flush_wait(conn)
            conn.execute(
                sa.update(keys)
                .where((keys.c.scope == scope) & (keys.c.key == key))
                .values(
                    state="done",
                    status_code=status_code,
                    response=body,
                    headers=headers or {},
                )
            )

    def release(self, scope: str, key: str) -> None:
        """A transient failure: forget the claim so that a retry runs afresh."""
        with self._engine.begin() as conn:
            conn.execute(
                sa.delete(keys).where(
                    (keys.c.scope == scope)
                    & (keys.c.key == key)
                    & (keys.c.state == "in_flight")
                )
            )


def _no_flush_wait(conn: sa.Connection) -> None:
    conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
