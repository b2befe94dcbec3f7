"""Requests per caller (contract §4.1): `CLUB_RATE_LIMIT` (default 50/second) for
each verified `sub`, else for each client address, in a moving window (`limits`).

Counted in the API process: with CLUB_API_WORKERS processes behind one port a
caller may reach that many times the rate (the kernel spreads connections
between them); a shared counter would cost a round trip per request."""

from __future__ import annotations

import math
import time

from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from entrypoints.config.exposure import DEFAULT_RATE, parsed_rate


class RateLimitedError(Exception):
    """Over the caller's rate: 429, with how long to wait."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"too many requests; retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class CallerLimit:
    def __init__(self, rate: str = DEFAULT_RATE) -> None:
        self._item = parsed_rate(rate)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def spend(self, who: str) -> None:
        """One request of `who`'s, or RateLimitedError when it has none left."""
        if self._limiter.hit(self._item, who):
            return
        reset = self._limiter.get_window_stats(self._item, who).reset_time
        raise RateLimitedError(max(1, math.ceil(reset - time.time())))
