"""Keeps a saga claim's lease alive while its step runs.

A step may wait on a slow provider for longer than the lease (each call is bounded
at connect + 2 x read timeout, and a step may make two): without renewal the claim
lapses mid-step and a second saga process advances the same purchase at once.
The keeper renews every third of the lease from a thread of its own; a process
that stops (SIGSTOP, a frozen VM) stops renewing too, so its claim still lapses.
"""

from __future__ import annotations

import threading
from types import TracebackType

import structlog

from adapters.postgres.deadlines import Claim, SagaDeadlines
from adapters.transient import TRANSIENT

log = structlog.get_logger()


class ClaimKeeper:
    def __init__(self, deadlines: SagaDeadlines, claim: Claim) -> None:
        self._deadlines = deadlines
        self._claim = claim
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew_until_stopped, name="saga-claim-keeper", daemon=True
        )
        self.lost = False

    def __enter__(self) -> ClaimKeeper:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _renew_until_stopped(self) -> None:
        every = self._deadlines.lease_seconds / 3
        while not self._stop.wait(every):
            try:
                renewed = self._deadlines.renew(self._claim)
            except TRANSIENT as error:  # the next beat may reach the database
                log.warning("saga.renew_failed", error=repr(error))
                continue
            if not renewed:
                self.lost = True
                log.info("saga.claim_lost", purchase_id=str(self._claim.purchase_id))
                return
