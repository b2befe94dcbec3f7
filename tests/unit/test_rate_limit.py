"""The worker's pace: the provider's limit, neither more nor (when busy) less."""

from __future__ import annotations

import asyncio
import time

import pytest

from adapters.nats.worker import RateLimit


def most_in_any_window(times: list[float], window_s: float) -> int:
    return max(
        sum(1 for t in times[i:] if t - moment < window_s)
        for i, moment in enumerate(times)
    )


def starts(limit: RateLimit, count: int, *, work_s: float = 0.0) -> list[float]:
    async def run() -> list[float]:
        times = []
        for _ in range(count):
            await limit.wait()
            times.append(time.monotonic())
            if work_s:
                time.sleep(work_s)  # a busy event loop: the wake-ups come late
        return times

    return asyncio.run(run())


def test_a_busy_worker_keeps_the_rate_and_never_exceeds_it() -> None:
    times = starts(RateLimit(400), 801)
    assert most_in_any_window(times, 1.0) <= 400  # the provider's rule
    elapsed = times[-1] - times[0]
    assert elapsed == pytest.approx(2 * 1.01, abs=0.05)  # 800 more: 2 windows


def test_late_wake_ups_are_made_up_within_the_window() -> None:
    """A loop that wakes 3 ms late each time: even spacing at 100/s would lose
    those 3 ms on every start (~77/s); the window gives them back."""
    times = starts(RateLimit(100), 201, work_s=0.003)
    assert most_in_any_window(times, 1.0) <= 100
    rate = 200 / (times[-1] - times[0])
    assert rate >= 97  # 100 / 1.01 a second, less the last window's slack


def test_concurrent_slots_share_one_limit() -> None:
    async def run() -> list[float]:
        limit, times = RateLimit(200), []

        async def slot() -> None:
            for _ in range(50):
                await limit.wait()
                times.append(time.monotonic())

        await asyncio.gather(*(slot() for _ in range(8)))
        return sorted(times)

    times = asyncio.run(run())
    assert len(times) == 400
    assert most_in_any_window(times, 1.0) <= 200


def test_a_fraction_of_a_rate_is_never_rounded_up() -> None:
    times = starts(RateLimit(2.5), 3)  # no second may hold 3
    assert most_in_any_window(times, 1.0) <= 2
    times = starts(RateLimit(0.5), 2)
    assert times[1] - times[0] >= 2.0  # one start in two seconds
