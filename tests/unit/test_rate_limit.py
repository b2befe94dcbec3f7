"""The worker's pace: the provider's limit, neither more nor (when busy) less."""

from __future__ import annotations

import asyncio
import time

from adapters.nats.worker import RateLimit


def starts(per_second: float, count: int) -> list[float]:
    async def run() -> list[float]:
        limit, times = RateLimit(per_second), []
        for _ in range(count):
            await limit.wait()
            times.append(time.monotonic())
        return times

    return asyncio.run(run())


def test_a_busy_worker_keeps_the_rate_and_never_exceeds_it() -> None:
    times = starts(200, 201)
    elapsed = times[-1] - times[0]
    assert 0.99 <= elapsed <= 1.1  # 200 intervals: the overshoots are not lost
    for i, moment in enumerate(times):  # never more than 200 in a sliding second
        assert sum(1 for t in times[i:] if t - moment < 1.0) <= 201


def test_after_an_idle_spell_it_does_not_burst() -> None:
    async def run() -> list[float]:
        limit = RateLimit(100)
        await limit.wait()
        await asyncio.sleep(0.5)  # idle: five intervals' worth of "credit"
        times = []
        for _ in range(5):
            await limit.wait()
            times.append(time.monotonic())
        return times

    times = asyncio.run(run())
    assert times[-1] - times[0] >= 0.039  # still spaced: no catching up in a burst
