"""Helpers shared by the benchmarks: timing, summaries, fixtures of data."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from uuid import UUID

from application.club import ClubApplication
from entrypoints.cli.demo import register_students, schedule_lesson
from entrypoints.config.role_env import role_env
from entrypoints.ops.confirmed_totals import confirmed_totals
from entrypoints.runtime import bootstrap

# Overrides for trying the bench out quickly; the published figures use the defaults.
RUNS = int(os.environ.get("CLUB_BENCH_RUNS", "3"))
SCALE = float(os.environ.get("CLUB_BENCH_SCALE", "1"))
STARTS_AT = datetime(2027, 1, 1, tzinfo=UTC)


def timed(work: Callable[[], int]) -> float:
    """Operations per second of one run of `work`, which returns its count."""
    start = time.perf_counter()
    count = work()
    return count / (time.perf_counter() - start)


def series(work: Callable[[], int]) -> list[float]:
    return [timed(work) for _ in range(RUNS)]


def new_lesson(app: ClubApplication, capacity: int) -> UUID:
    return schedule_lesson(app, capacity=capacity, title="Bench", starts_at=STARTS_AT)


def students(container: bootstrap.Container, n: int) -> list[str]:
    """Addresses are `<id>@bench.example`: the jobs bench looks them up."""
    return register_students(container.students, n, prefix="b", domain="bench.example")


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[max(0, int(len(ordered) * 0.99) - 1)],
    }


@contextmanager
def role(
    database_url: str, nats_url: str, *args: str, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """One `club` role as its own process, as deployed; stopped on the way out."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=role_env(database_url, nats_url, **env),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def wait_until_projected(container: bootstrap.Container, timeout: float = 120) -> None:
    """Until the statistics projection counts every enrollment in the event store."""
    deadline = time.monotonic() + timeout
    while not (
        totals := confirmed_totals(bootstrap.confirmed_counts(container))
    ).caught_up:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the statistics projection lags: {totals}")
        time.sleep(0.1)
