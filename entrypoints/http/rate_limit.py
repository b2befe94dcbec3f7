"""Requests per caller (contract §4.1): `CLUB_RATE_LIMIT` (default 50/second) for
each verified `sub`, else for each client address.

The rate is read by the `limits` library; the counting is a generic cell rate
algorithm (GCRA: one "next allowed" time per caller, a burst of the whole rate)
kept here, because `limits`' in-memory storage starts a thread every 10 ms that
walks every caller seen (measured: ~0.3 ms of API CPU per request at 300
callers/s, five times what verifying the token costs). Counted in the API
process: with CLUB_API_WORKERS processes behind one port a caller may reach that
many times the rate (the kernel spreads connections between them); a shared
counter would cost a round trip per request."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from entrypoints.config.exposure import DEFAULT_RATE, parsed_rate

PRUNE_AT = 10_000  # callers remembered before the idle ones are forgotten
EPSILON_S = 1e-9  # sums of a request's share carry float error: never refuse for it


class RateLimitedError(Exception):
    """Over the caller's rate: 429, with how long to wait."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"too many requests; retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class CallerLimit:
    def __init__(
        self, rate: str = DEFAULT_RATE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        item = parsed_rate(rate)
        period = item.get_expiry()  # seconds in the rate's window
        self._interval = period / item.amount  # one request's share of the window
        self._burst = period - self._interval  # a whole window's worth at once
        self._clock = clock
        self._next: dict[str, float] = {}  # caller -> when its budget is whole again
        self._lock = threading.Lock()

    def spend(self, who: str) -> None:
        """One request of `who`'s, or RateLimitedError when it has none left."""
        now = self._clock()
        with self._lock:
            due = max(self._next.get(who, now), now)
            if due - now > self._burst + EPSILON_S:
                wait = due - self._burst - now
                raise RateLimitedError(max(1, math.ceil(wait)))
            self._next[who] = due + self._interval
            if len(self._next) > PRUNE_AT:
                self._forget_idle(now)

    def _forget_idle(self, now: float) -> None:
        """A caller whose budget is whole again is the same as one never seen."""
        self._next = {who: due for who, due in self._next.items() if due > now}
