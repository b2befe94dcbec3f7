"""A provider's circuit in PostgreSQL: one row, changed by compare-and-set.

Every worker process reads the same row, so the slots of all of them stop together
when the provider fails for everyone, and one process at a time probes it. Each
change is decided by the pure `application.provider_circuit.change` from the row
as read (with the database's `now()`), then written only if `version` has not
moved meanwhile; a lost race reads again. Why a row and not a NATS KV entry:
docs/decisions/2026-12-02-provider-circuit-in-postgresql.md.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import provider_circuits as table
from adapters.reasons import one_line
from application.provider_circuit import (
    CircuitPolicy,
    CircuitState,
    CircuitView,
    Heard,
    change,
)

log = structlog.get_logger()

CAS_TRIES = 20  # racing writers: each lost race re-reads; far more than slots race
_READ = sa.select(table, sa.func.now().label("db_now"))


class SqlProviderCircuit:
    """The `ProviderCircuit` port for one provider, and what the worker's gate
    reads. A view of the row is kept for `fresh_s` so that a success (every
    e-mail) costs no query while the circuit is closed and counts nothing."""

    def __init__(
        self,
        engine: sa.Engine,
        provider: str,
        policy: CircuitPolicy,
        *,
        fresh_s: float = 1.0,
    ) -> None:
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self.provider = provider
        self.policy = policy
        self._fresh_s = fresh_s
        self._lock = threading.Lock()
        self._view: CircuitView | None = None
        self._read_at = 0.0  # monotonic

    # -- the port ---------------------------------------------------------------

    def failed(self, error: str) -> bool:
        return self._apply(Heard.FAILED, one_line(error)).state.open

    def answered(self) -> None:
        seen = self.view()
        if seen.state.failures or seen.state.open:
            self._apply(Heard.ANSWERED)

    # -- the gate's ---------------------------------------------------------------

    def view(self, *, max_age_s: float | None = None) -> CircuitView:
        """The row as last read, read again when older than `max_age_s`."""
        return self.cached(max_age_s=max_age_s) or self._read()

    def cached(self, *, max_age_s: float | None = None) -> CircuitView | None:
        """The row as last read if younger than `max_age_s`, without a query (a
        slot asks before every fetch: no thread, no round trip)."""
        limit = self._fresh_s if max_age_s is None else max_age_s
        with self._lock:
            view, read_at = self._view, self._read_at
        elapsed = time.monotonic() - read_at
        if view is None or elapsed >= limit:
            return None
        return CircuitView(
            provider=view.provider,
            state=view.state,
            now=view.now + timedelta(seconds=elapsed),
        )

    def claim_probe(self) -> bool:
        """True: this process probes now (the row's next probe moved on by it)."""
        seen = self._read()
        new = change(seen.state, Heard.PROBE_CLAIMED, now=seen.now, policy=self.policy)
        # One try: a lost race means another process claimed this probe.
        if new is None or not self._write(seen.state.version, new):
            return False
        self._keep(CircuitView(provider=self.provider, state=new, now=seen.now))
        return True

    def probed(self, error: str | None) -> CircuitView:
        """A probe's result: None, the provider answered (closed); else why not."""
        if error is None:
            return self._apply(Heard.PROBE_ANSWERED)
        return self._apply(Heard.PROBE_FAILED, one_line(error))

    # -- reads and writes ---------------------------------------------------------

    def _read(self) -> CircuitView:
        with self._engine.connect() as conn:
            row = conn.execute(_READ.where(table.c.provider == self.provider)).first()
            if row is None:
                conn.execute(
                    insert(table)
                    .values(provider=self.provider)
                    .on_conflict_do_nothing()
                )
                row = conn.execute(_READ.where(table.c.provider == self.provider)).one()
        return self._keep(_view(self.provider, row))

    def _apply(self, heard: Heard, error: str | None = None) -> CircuitView:
        seen = self._read()
        for _ in range(CAS_TRIES):
            new = change(
                seen.state, heard, now=seen.now, policy=self.policy, error=error
            )
            if new is None:
                return seen
            if self._write(seen.state.version, new):
                _log_turn(self.provider, seen.state, new)
                kept = CircuitView(provider=self.provider, state=new, now=seen.now)
                return self._keep(kept)
            seen = self._read()
        msg = f"circuit {self.provider}: {CAS_TRIES} writes in a row lost their race"
        raise RuntimeError(msg)

    def _write(self, expected: int, new: CircuitState) -> bool:
        with self._engine.connect() as conn:
            done = conn.execute(
                sa.update(table)
                .where(table.c.provider == self.provider)
                .where(table.c.version == expected)
                .values(
                    failures=new.failures,
                    opened_at=new.opened_at,
                    next_probe_at=new.next_probe_at,
                    last_error=new.last_error,
                    version=new.version,
                    updated_at=sa.func.now(),
                )
            )
        return done.rowcount == 1

    def _keep(self, view: CircuitView) -> CircuitView:
        with self._lock:
            self._view, self._read_at = view, time.monotonic()
        return view


class SqlProviderCircuits:
    """Every provider's circuit, for the console (`ProviderCircuits`)."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def circuits(self) -> list[CircuitView]:
        with self._engine.connect() as conn:
            rows = conn.execute(_READ.order_by(table.c.provider)).all()
        return [_view(row.provider, row) for row in rows]


def _log_turn(provider: str, old: CircuitState, new: CircuitState) -> None:
    if new.open and not old.open:
        log.warning(
            "provider.circuit_opened",
            provider=provider,
            failures=new.failures,
            error=new.last_error,
        )
    elif old.open and not new.open:
        log.warning("provider.circuit_closed", provider=provider)


def _view(provider: str, row: Any) -> CircuitView:
    db_now: datetime = row.db_now
    return CircuitView(
        provider=provider,
        state=CircuitState(
            failures=row.failures,
            opened_at=row.opened_at,
            next_probe_at=row.next_probe_at,
            last_error=row.last_error,
            version=row.version,
        ),
        now=db_now,
    )
