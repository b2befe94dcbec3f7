"""Resident memory of `club relay` and `club projector statistics` over 100,000 events.

Both run as their own processes. Events are loaded in tenths; after each tenth
has gone through the relay and the projection, the resident set size of each
process is sampled. Growth is measured from the end of warm-up (the second tenth)
to the end, so start-up allocations and caches filling once do not count.
"""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from bench.rebuild import load_notifications
from entrypoints import bootstrap
from projections import statistics
from tests.faults.workload import confirmed_totals
from tests.stack import club_env

STEPS = 10
WARM_UP_STEPS = 2


def resident_growth(
    container: bootstrap.Container, database_url: str, nats_url: str, events: int
) -> dict[str, dict[str, float]]:
    env = club_env(database_url, nats_url)
    roles = {
        "relay": ["relay"],
        "projector": ["projector", statistics.NAME],
    }
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "entrypoints.cli", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, args in roles.items()
    }
    samples: dict[str, list[float]] = {name: [] for name in procs}
    try:
        for _ in range(STEPS):
            load_notifications(container, 2 * events // STEPS)  # 2 per enrollment
            _wait_for_projection(container, time.monotonic() + 120)
            for name, proc in procs.items():
                samples[name].append(psutil.Process(proc.pid).memory_info().rss / 2**20)
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(10)
    return {
        name: {
            "after_warm_up_mib": values[WARM_UP_STEPS - 1],
            "end_mib": values[-1],
            "growth": values[-1] / values[WARM_UP_STEPS - 1] - 1,
            "samples_mib": values,
        }
        for name, values in samples.items()
    }


def _wait_for_projection(container: bootstrap.Container, deadline: float) -> None:
    """Until the projection counts every confirmed enrollment in the event store."""
    while (totals := confirmed_totals(container))["projection"] < totals["store"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the projection lags: {totals}")
        time.sleep(0.2)
