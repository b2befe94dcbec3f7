"""`club saga`: the purchase saga as a long-running process.

Each round: read new purchase events from the notification log (each wakes its
purchase), claim a purchase whose deadline has come, advance it as far as is due
now (`PurchaseSaga.advance`) while its lease is renewed, write when it must wake
next, and claim the next. Several processes may run: a claim is exclusive until
its lease runs out, and every step they could both take is refused by the
purchase's version, by the deadline it was due at, or named by one key.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import structlog
from structlog.contextvars import bound_contextvars

from adapters.crash import crash_point
from adapters.metrics import count_retries
from adapters.postgres.claim_keeper import ClaimKeeper
from adapters.postgres.deadlines import Claim, SagaDeadlines
from adapters.postgres.saga_feed import SagaFeed
from adapters.providers.metered import failures_seen
from adapters.transient import TRANSIENT, Backoff
from application.backoff import BackoffPolicy, Jitter
from application.errors import NotFoundError
from application.saga_runner import PurchaseSaga

log = structlog.get_logger()
CLAIM_BATCH = 16
SAGA = "saga"  # its `consumer` label on the retry counter
MAX_ERROR_DELAY_S = 30.0
# Steps failing for a reason no retry classifies (a bug, a value nobody expected):
# after this many in a row (about 30 s of retries), a person decides.
GIVE_UP_AFTER = 6
# A purchase whose step failed: 1 s after the first failure, doubling to 30 s,
# equal jitter (never ~0: a failing purchase does not spin).
ERROR_RETRY = BackoffPolicy(first=1.0, cap=MAX_ERROR_DELAY_S, jitter=Jitter.EQUAL)


class SagaProcess:
    def __init__(
        self,
        *,
        saga: PurchaseSaga,
        deadlines: SagaDeadlines,
        feed: SagaFeed,
        poll_seconds: float,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._saga = saga
        self._deadlines = deadlines
        self._feed = feed
        self._poll = poll_seconds
        self._clock = clock
        self._failures: dict[object, int] = {}

    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff()
        while not stop.is_set():
            try:
                busy = await asyncio.to_thread(self.round)
            except TRANSIENT as error:  # the database away or hung: wait it out
                log.warning("saga.retry", error=repr(error))
                await backoff.wait()
                continue
            backoff.reset()
            if busy:
                continue  # more may be due right away
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._poll)

    def round(self) -> bool:
        """One pass; True if it found work (the next pass may find more)."""
        fed = self._feed.pump()
        worked = 0
        # One purchase per claim: a claim's lease starts when its step starts, so
        # purchases waiting behind a slow one are never held by a lapsing claim.
        while worked < CLAIM_BATCH and (claims := self._deadlines.claim(1)):
            worked += 1
            self._advance(claims[0])
        return bool(fed or worked)

    def _advance(self, claim: Claim) -> None:
        # The purchase is the saga's unit of work: its id on every line meanwhile.
        pid = str(claim.purchase_id)
        with bound_contextvars(purchase_id=pid, correlation_id=pid):
            self._advance_one(claim)

    def _advance_one(self, claim: Claim) -> None:
        pid = claim.purchase_id
        now = self._clock()
        try:
            with failures_seen() as seen, ClaimKeeper(self._deadlines, claim):
                next_due = self._saga.advance(pid, now)
        except NotFoundError:  # woken for no purchase: nothing will ever be due
            self._deadlines.release(claim, None, "no such purchase")
            return
        except Exception as error:  # one purchase must not stop the rest
            # Retried later with a growing pause; the purchase's state is intact
            # (every step saved, or refused, whole).
            kind = "transient" if isinstance(error, TRANSIENT) else "unknown"
            count_retries(SAGA, kind)
            failures = self._failures.get(pid, 0) + 1
            self._failures[pid] = failures
            log.warning("saga.step_failed", purchase_id=str(pid), error=repr(error))
            if kind == "unknown" and failures >= GIVE_UP_AFTER:
                self._give_up(claim, error, failures)
                return
            delay = ERROR_RETRY.delay(failures)
            self._deadlines.release(
                claim, now + timedelta(seconds=delay), repr(error)[:500], as_of=now
            )
            return
        self._finish(claim, next_due, now, seen)

    def _give_up(self, claim: Claim, error: Exception, failures: int) -> None:
        """A step that failed the same unknown way again and again will not pass by
        waiting: a person decides, with the error as the reason."""
        pid = claim.purchase_id
        reason = f"the saga's step failed {failures} times: {error!r}"[:500]
        try:
            self._saga.give_up(pid, reason)
        except Exception as failed:  # kept, and retried as before
            log.warning("saga.give_up_failed", purchase_id=str(pid), error=repr(failed))
            now = self._clock()
            delay = timedelta(seconds=MAX_ERROR_DELAY_S)
            self._deadlines.release(claim, now + delay, repr(error)[:500], as_of=now)
            return
        self._failures.pop(pid, None)
        self._deadlines.release(claim, None, reason)

    def _finish(
        self, claim: Claim, next_due: datetime | None, now: datetime, seen: list[str]
    ) -> None:
        pid = claim.purchase_id
        self._failures.pop(pid, None)
        # Each transient or unknown provider answer becomes a later try (charge
        # again, look the payment up, refund again): a retry of that class.
        for kind in seen:
            if kind != "permanent":
                count_retries(SAGA, kind)
        crash_point("saga.after_step")
        if not self._deadlines.release(claim, next_due, as_of=now):
            log.info("saga.claim_lost", purchase_id=str(pid))
