"""What one hand-off of a route's work to a thread costs: `python -m bench.handoff`.

The API hands each enrollment's database work to a thread once
(entrypoints/http/threads.py:in_thread). This compares it with the event loop's
`run_in_executor` on a `ThreadPoolExecutor` of the same size, for trivial work,
four requests at a time: the process's CPU per hand-off, both sides of it (the
loop's and the thread's). The rounds interleave the two, so that load from
elsewhere falls on both alike; prints each side's median and their ratio.
"""

from __future__ import annotations

import asyncio
import contextvars
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from entrypoints.http.threads import THREADS, in_thread

HandOff = Callable[[Callable[[], int]], Awaitable[int]]
_POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="bench-executor")


async def run_in_executor(work: Callable[[], int]) -> int:
    """What `in_thread` was: the executor, a concurrent future, two chained."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_POOL, context.run, work)


async def cpu_us_per_hand_off(hand_off: HandOff, calls: int, at_once: int) -> float:
    async def caller() -> None:
        for _ in range(calls // at_once):
            await hand_off(int)

    began = time.process_time()
    await asyncio.gather(*(caller() for _ in range(at_once)))
    return (time.process_time() - began) / calls * 1e6


def main(rounds: int = 7, calls: int = 20_000, at_once: int = 4) -> None:
    sides: dict[str, HandOff] = {
        "run_in_executor": run_in_executor,
        "in_thread": in_thread,
    }
    measured: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, hand_off in sides.items():
            measured[name].append(
                asyncio.run(cpu_us_per_hand_off(hand_off, calls, at_once))
            )
    medians = {name: statistics.median(runs) for name, runs in measured.items()}
    for name, runs in measured.items():
        shown = ", ".join(f"{us:.1f}" for us in runs)
        print(f"{name}: CPU per hand-off, µs: median {medians[name]:.1f} ({shown})")
    ratio = medians["in_thread"] / medians["run_in_executor"]
    print(f"in_thread / run_in_executor: {ratio:.2f}")


if __name__ == "__main__":
    main()
