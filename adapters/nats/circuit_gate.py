"""The worker's side of a provider circuit: a slot asks before it takes a message.

While the shared circuit (adapters/postgres/provider_circuits.py) is closed, every
slot takes messages as before, at the cost of a row read about once a second per
process. While it is open, no slot takes one: the messages stay in the stream,
un-fetched, so no attempt is spent; the slot that finds a probe due claims it on
the database's clock (one process wins each probe), asks the provider's status
lookup under a key no message uses (an answer, even "not found", proves the
provider is up) and closes the circuit when it answers. The others wait until
the next probe, or a stop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog

from adapters.metrics import (
    PROVIDER_CIRCUIT_OPEN,
    PROVIDER_CIRCUIT_OPEN_SECONDS,
    PROVIDER_PROBES,
)
from adapters.postgres.provider_circuits import SqlProviderCircuit
from adapters.reasons import describe
from adapters.transient import TRANSIENT
from application.email import EmailSendError, PermanentSendError, TransientSendError
from application.provider_circuit import Admission, CircuitView, admission

log = structlog.get_logger()

PROBE_KEY = "club-circuit-probe"  # never a notification's key (club-notification-…)
MAX_WAIT_S = 1.0  # an open circuit is read again at least this often


def _down(error: EmailSendError) -> bool:
    """Whether a failed probe says the provider is down. A 429, or a lookup the
    provider refused for good (a 4xx: our key, our account), is an answer: it is up,
    and what the messages meet is theirs to decide."""
    if isinstance(error, TransientSendError) and error.throttled:
        return False
    return not isinstance(error.__cause__ or error, PermanentSendError)


class CircuitGate:
    def __init__(
        self, circuit: SqlProviderCircuit, probe: Callable[[], object]
    ) -> None:
        """`probe`: a call that raises an `EmailSendError` while the provider is
        down (the status lookup of `PROBE_KEY`)."""
        self._circuit = circuit
        self._probe = probe
        self._reading = asyncio.Lock()  # one read at a time for all the slots

    async def admits(self, stop: asyncio.Event) -> bool:
        """True: take a message. False after a wait (the circuit is open)."""
        try:
            view = await self._view()
        except TRANSIENT as e:  # our database: the job would meet it too
            log.warning("worker.circuit_unread", error=describe(e))
            return True
        decided = admission(view.state, now=view.now)
        if decided is Admission.TAKE:
            return True
        if decided is Admission.PROBE:
            try:
                view = await asyncio.to_thread(self._probe_once)
            except TRANSIENT as e:  # our database: the probe waits for it too
                log.warning("worker.probe_unrecorded", error=describe(e))
            if not view.state.open:
                return True
        wait = MAX_WAIT_S
        if view.state.next_probe_at is not None:
            until = (view.state.next_probe_at - view.now).total_seconds()
            wait = min(wait, max(until, 0.05))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)
        return False

    async def _view(self) -> CircuitView:
        view = self._circuit.cached()
        if view is None:
            async with self._reading:  # the first slot reads, the others wait
                view = await asyncio.to_thread(self._circuit.view)
            self._observe(view)
        return view

    def _probe_once(self) -> CircuitView:
        """Blocking: claim the probe; if this process won it, ask the provider."""
        if not self._circuit.claim_probe():
            return self._circuit.view(max_age_s=0)
        provider = self._circuit.provider
        try:
            self._probe()
        except EmailSendError as e:
            if not _down(e):
                return self._back(provider)
            PROVIDER_PROBES.labels(provider=provider, outcome="failed").inc()
            log.info("worker.probe_failed", provider=provider, error=describe(e))
            view = self._circuit.probed(str(e))
        else:
            return self._back(provider)
        self._observe(view)
        return view

    def _back(self, provider: str) -> CircuitView:
        PROVIDER_PROBES.labels(provider=provider, outcome="answered").inc()
        log.warning("worker.provider_back", provider=provider)
        view = self._circuit.probed(None)
        self._observe(view)
        return view

    def _observe(self, view: CircuitView) -> None:
        opened = view.state.opened_at
        PROVIDER_CIRCUIT_OPEN.labels(provider=view.provider).set(
            0 if opened is None else 1
        )
        PROVIDER_CIRCUIT_OPEN_SECONDS.labels(provider=view.provider).set(
            0 if opened is None else max((view.now - opened).total_seconds(), 0)
        )
