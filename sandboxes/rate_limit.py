"""A sliding one-second window over accepted sends: never more than the limit.

A token bucket would let a burst of `limit` follow a full second; a sliding log
guarantees that every window of one second holds at most `limit` acceptances,
which is what a bench checks against the accepted timestamps.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable

WINDOW_S = 1.0


class SlidingWindow:
    def __init__(self, accepted_at: Iterable[float] = ()) -> None:
        self._accepted: deque[float] = deque(sorted(accepted_at))

    def wait_before(self, now: float, limit: int) -> float:
        """0 if one more acceptance at `now` keeps the limit, else seconds to wait."""
        while self._accepted and self._accepted[0] <= now - WINDOW_S:
            self._accepted.popleft()
        if len(self._accepted) < limit:
            return 0.0
        return self._accepted[-limit] + WINDOW_S - now

    def record(self, at: float) -> None:
        self._accepted.append(at)


def retry_after_header(wait_s: float) -> str:
    """Retry-After takes whole seconds; rounding down would invite a second 429."""
    return str(max(1, math.ceil(wait_s)))
