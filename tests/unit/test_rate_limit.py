"""The worker's pace: the provider's limit, neither more nor (when busy) less.

On a clock of the test's own: every sleep wakes a little late, as a busy event loop
does, and nothing depends on how loaded the machine running the test is."""

from __future__ import annotations

import asyncio

from adapters.nats.worker import RateLimit

LATE_S = 0.0007  # each wake-up's overshoot: a busy loop's


class LateClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds + LATE_S

    async def idle(self, seconds: float) -> None:
        self.now += seconds


def starts(per_second: float, count: int) -> list[float]:
    clock = LateClock()

    async def run() -> list[float]:
        limit, times = RateLimit(per_second, clock=clock, sleep=clock.sleep), []
        for _ in range(count):
            await limit.wait()
            times.append(clock())
        return times

    return asyncio.run(run())


def test_a_busy_worker_keeps_the_rate_and_never_exceeds_it() -> None:
    times = starts(200, 201)
    elapsed = times[-1] - times[0]
    # 200 intervals of 5 ms: each wake-up's overshoot is made up by the next
    # sleep, so only the last one shows (a schedule that lost them: 1.14 s).
    assert 1.0 <= elapsed <= 1.0 + 1.5 * LATE_S
    for i, moment in enumerate(times):  # never more than 200 in a sliding second
        assert sum(1 for t in times[i:] if t - moment < 1.0) <= 200


def test_after_an_idle_spell_it_does_not_burst() -> None:
    clock = LateClock()

    async def run() -> list[float]:
        limit = RateLimit(100, clock=clock, sleep=clock.sleep)
        await limit.wait()
        await clock.idle(0.5)  # idle: fifty intervals' worth of "credit"
        times = []
        for _ in range(5):
            await limit.wait()
            times.append(clock())
        return times

    times = asyncio.run(run())
    assert times[-1] - times[0] >= 4 * 0.01  # still spaced: no catching up in a burst
