"""`make bench`: Club's figures beside the raw limits, measured in the same run.

Starts its own embedded PostgreSQL and NATS (`sync_interval: always`, as shipped),
runs each measurement several times, prints median/min/max and the ratio of Club's
median to the raw median, and writes bench/results/latest.json.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.process import free_port
from bench.common import RUNS, series, summary
from bench.http import http_enrollments, raw_saves, steady_latencies
from bench.rebuild import load_notifications, raw_read_rate, rebuild_rate
from bench.relay import RELAY_BACKLOG, raw_publish_rate, relay_rate
from entrypoints import bootstrap
from tests.integration.helpers import lesson_with_enrollments
from tests.servers import scratch_dir
from tests.stack import club_env, wait_ready

REBUILD_NOTIFICATIONS = 100_000
RESULTS = Path(__file__).parent / "results" / "latest.json"


def main() -> int:
    root = scratch_dir("club-bench-")
    pg = EmbeddedPostgres(root / "pg")  # durable, as shipped
    nats = EmbeddedNats(root / "nats", sync_always=True)
    database_url, nats_url = pg.start(), nats.start()
    results: dict[str, dict] = {}
    api_proc = None
    try:
        bootstrap.migrate(database_url, nats_url)
        container = bootstrap.build(database_url, pool_size=10)
        port = free_port()
        env = club_env(database_url, nats_url, CLUB_HTTP_PORT=str(port))
        api_proc = subprocess.Popen(
            [sys.executable, "-m", "entrypoints.cli", "api"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        api = f"http://127.0.0.1:{port}"
        wait_ready(api)
        for clients in (1, 8):
            results[f"http_enrollments_per_s_{clients}_clients"] = {
                "club": summary(series(http_enrollments(container, api, clients))),
                "raw": summary(series(raw_saves(container, clients))),
                "raw_is": "eventsourcing save() of Lesson + Enrollment, in-process",
            }
        spread = results["http_enrollments_per_s_8_clients"]["club"]
        hot = http_enrollments(container, api, 8, one_lesson=True)
        results["http_enrollments_per_s_8_clients_one_lesson"] = {
            "club": summary(series(hot)),
            "raw": spread,
            "raw_is": "the same 8 clients spread over 8 lessons (row above)",
        }
        steady = [
            steady_latencies(container, api, rate=100, count=500) for _ in range(RUNS)
        ]
        latency = {k: statistics.median(run[k] for run in steady) for k in steady[0]}
        lesson_with_enrollments(container, RELAY_BACKLOG)
        results["relay_events_per_s"] = {
            "club": summary(relay_rate(container, database_url, nats_url)),
            "raw": summary(raw_publish_rate(container, nats_url)),
            "raw_is": "nats-py publish_async of the same envelopes, batches of 500",
        }
        load_notifications(container, REBUILD_NOTIFICATIONS)
        results["rebuild_statistics_per_s"] = {
            "club": summary([rebuild_rate(container) for _ in range(RUNS)]),
            "raw": summary([raw_read_rate(container) for _ in range(RUNS)]),
            "raw_is": "select_notifications of the same log, batches of 2000",
            "note": "club counts published events; raw counts notifications (x2)",
        }
        container.close()
    finally:
        if api_proc is not None:
            api_proc.terminate()
            api_proc.wait()
        pg.stop()
        nats.stop()
    report(results, latency)
    return 0


def report(results: dict[str, dict], latency: dict[str, float]) -> None:
    machine = (
        f"{platform.machine()}, {_cores()} cores, Python {platform.python_version()}"
    )
    table = Table(title=f"Club benchmarks — median of {RUNS} runs ({machine})")
    for column in ("figure", "Club median", "min-max", "raw median", "ratio"):
        table.add_column(column)
    for name, row in results.items():
        club, raw = row["club"], row["raw"]
        row["ratio"] = club["median"] / raw["median"]
        table.add_row(
            name, f"{club['median']:,.0f}", f"{club['min']:,.0f}-{club['max']:,.0f}",
            f"{raw['median']:,.0f}", f"{row['ratio']:.2f}",
        )  # fmt: skip
    Console().print(table)
    print(
        "enrollment latency at a steady 100/s: "
        f"p50 {latency['p50_ms']:.1f} ms, p99 {latency['p99_ms']:.1f} ms"
    )
    RESULTS.write_text(
        json.dumps(
            {
                "machine": machine,
                "runs": RUNS,
                "when": datetime.now(UTC).isoformat(),
                "nats_sync_interval": "always",
                "results": results,
                "latency_at_100_per_s": latency,
            },
            indent=2,
        )
    )
    print(f"written to {RESULTS}")


def _cores() -> int:
    return os.cpu_count() or 0


if __name__ == "__main__":
    sys.exit(main())
