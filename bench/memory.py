"""Resident memory of `club relay` and `club projector statistics` over 100,000 events.

Both run as their own processes. Events are loaded in tenths; after each tenth
has gone through the relay and the projection, the resident set size of each
process is sampled. Growth is measured from the end of warm-up (the second tenth)
to the end, so start-up allocations and caches filling once do not count.
"""

from __future__ import annotations

import psutil

from bench.common import role, wait_until_projected
from bench.rebuild import load_notifications
from entrypoints.runtime import bootstrap
from projections import statistics

STEPS = 10
WARM_UP_STEPS = 2


def resident_growth(
    container: bootstrap.Container, database_url: str, nats_url: str, events: int
) -> dict[str, dict[str, float]]:
    with (
        role(database_url, nats_url, "relay") as relay,
        role(database_url, nats_url, "projector", statistics.NAME) as projector,
    ):
        procs = {"relay": relay, "projector": projector}
        samples: dict[str, list[float]] = {name: [] for name in procs}
        for _ in range(STEPS):
            load_notifications(container, 2 * events // STEPS)  # 2 per enrollment
            wait_until_projected(container)
            for name, proc in procs.items():
                samples[name].append(psutil.Process(proc.pid).memory_info().rss / 2**20)
    return {
        name: {
            "after_warm_up_mib": values[WARM_UP_STEPS - 1],
            "end_mib": values[-1],
            "growth": values[-1] / values[WARM_UP_STEPS - 1] - 1,
            "samples_mib": values,
        }
        for name, values in samples.items()
    }
