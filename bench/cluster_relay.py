"""Relay events/s into one server (1 replica) and into the three-node cluster
(3 replicas), both `sync_interval: always`, from the same durable event store.

`python -m bench.cluster_relay` (one server against the cluster; `make bench`'s
`cluster` section measures the cluster against nats-py): runs alternate, so load
from elsewhere on the machine falls on both alike; prints each and the medians, and
writes bench/results/cluster.json. Figures are quoted in docs/scaling.md.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from adapters.embedded.cluster import EmbeddedNatsCluster
from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from bench.relay import relay_once
from entrypoints.cli.demo import lesson_with_enrollments
from entrypoints.runtime import bootstrap

ENROLLMENTS = 2000
RUNS = 3
RESULTS = Path(__file__).parent / "results" / "cluster.json"


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="club-bench-cluster-"))
    pg = EmbeddedPostgres(root / "pg", durable=True)
    single = EmbeddedNats(root / "single", sync_always=True)
    cluster = EmbeddedNatsCluster(root / "cluster")
    brokers: dict[str, tuple[EmbeddedNats | EmbeddedNatsCluster, int]] = {
        "1 server, 1 replica": (single, 1),
        "3 nodes, 3 replicas": (cluster, 3),
    }
    rates: dict[str, list[float]] = {label: [] for label in brokers}
    database_url = pg.start()
    try:
        single.start()
        cluster.start()
        bootstrap.migrate_database(database_url)
        container = bootstrap.build(database_url, pool_size=4)
        lesson_with_enrollments(container, ENROLLMENTS)
        for _ in range(RUNS):
            for label, (broker, replicas) in brokers.items():
                rate = relay_once(container, database_url, broker.url, replicas)
                rates[label].append(rate)
                print(f"{label}: {rate:,.0f} events/s", file=sys.stderr)
        container.close()
    finally:
        cluster.stop()
        single.stop()
        pg.stop()
    summary = {
        "events": ENROLLMENTS + 1,
        "when": datetime.now(UTC).isoformat(),
        "relay events/s": {
            label: {"median": statistics.median(r), "min": min(r), "max": max(r)}
            for label, r in rates.items()
        },
    }
    RESULTS.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
