"""The one exponential every retry in Club grows by."""

from __future__ import annotations

MAX_DOUBLINGS = 64  # any cap is reached long before: 2**64 times a millisecond


def doubled(first: float, times: int, cap: float) -> float:
    """`first` doubled `times` times, at most `cap`. The count is bounded before
    the power is taken: a count of failures has no bound of its own, and past
    2**1023 a float overflows — a role waiting out a long outage would crash on
    the attempt that outlived it."""
    return min(cap, first * 2.0 ** min(max(times, 0), MAX_DOUBLINGS))
