"""Helpers shared by the benchmarks: timing, summaries, fixtures of data."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import attrs

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.process import wait_or_kill
from adapters.embedded.scratch import scratch_dir
from application.club import ClubApplication
from bench.callers import AUTH_ENV
from domain.student import StudentProfile
from entrypoints.cli.demo import schedule_lesson
from entrypoints.config.role_env import role_env
from entrypoints.ops.confirmed_totals import confirmed_totals
from entrypoints.runtime import bootstrap

# Overrides for trying the bench out quickly; the published figures use the defaults.
RUNS = int(os.environ.get("CLUB_BENCH_RUNS", "3"))
SCALE = float(os.environ.get("CLUB_BENCH_SCALE", "1"))
STARTS_AT = datetime(2027, 1, 1, tzinfo=UTC)


@attrs.frozen
class Staged:
    """Work in two steps: `prepare` before the clock starts (what a client holds
    before it calls: its token), then `run(prepared)`, timed; called, both."""

    prepare: Callable[[], Any]
    run: Callable[[Any], int]

    def __call__(self) -> int:
        return self.run(self.prepare())


def timed(work: Callable[[], int]) -> float:
    """Operations per second of one run of `work`, which returns its count."""
    prepared = work.prepare() if isinstance(work, Staged) else None
    start = time.perf_counter()
    count = work.run(prepared) if isinstance(work, Staged) else work()
    return count / (time.perf_counter() - start)


def series(work: Callable[[], int]) -> list[float]:
    return [timed(work) for _ in range(RUNS)]


def new_lesson(app: ClubApplication, capacity: int) -> UUID:
    return schedule_lesson(app, capacity=capacity, title="Bench", starts_at=STARTS_AT)


def students(container: bootstrap.Container, n: int) -> list[str]:
    """Addresses are `<id>@bench.example`: the jobs bench looks them up."""
    return register(container, student_ids(n))


def student_ids(n: int) -> list[str]:
    """Ids for `register`, chosen ahead (their tokens signed before the clock)."""
    return [f"b-{uuid4().hex[:10]}" for _ in range(n)]


def register(container: bootstrap.Container, ids: Sequence[str]) -> list[str]:
    """A profile for each of `ids`, as `club demo`'s register_students makes them."""
    for student_id in ids:
        container.students.save(
            StudentProfile.create(
                student_id=student_id, email=f"{student_id}@bench.example", name="Ann"
            )
        )
    return list(ids)


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
    """One `club` role as its own process, as deployed; stopped on the way out.
    Every role gets the bench's CLUB_AUTH_SECRET, as `club up` gives its roles one
    (the API refuses to start without a way to verify tokens)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=role_env(database_url, nats_url, **(AUTH_ENV | env)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield proc
    finally:
        proc.terminate()
        wait_or_kill(proc, 10)  # one that ignores the request is no later run's load


def wait_until_projected(
    container: bootstrap.Container, timeout: float = 120, poll: float = 0.1
) -> None:
    """Until the statistics projection counts every enrollment in the event store."""
    deadline = time.monotonic() + timeout
    while not (
        totals := confirmed_totals(bootstrap.confirmed_counts(container))
    ).caught_up:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the statistics projection lags: {totals}")
        time.sleep(poll)


@contextmanager
def embedded_servers(prefix: str) -> Iterator[tuple[EmbeddedPostgres, str, str]]:
    """An embedded PostgreSQL and NATS (`sync_interval: always`, as shipped) in a
    scratch directory of their own; yields the server, its URL and NATS's URL, and
    stops both on the way out (the server's log stays readable after)."""
    root = scratch_dir(prefix)
    pg = EmbeddedPostgres(root / "pg")
    nats = EmbeddedNats(root / "nats", sync_always=True)
    try:
        yield pg, pg.start(), nats.start()
    finally:
        pg.stop()
        nats.stop()
