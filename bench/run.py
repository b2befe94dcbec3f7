"""`make bench`: Club's figures beside the raw limits, measured in the same run.

Starts its own embedded PostgreSQL and NATS (`sync_interval: always`, as shipped),
runs each measurement several times, prints median/min/max and the ratio of Club's
median to the raw median, and writes bench/results/latest.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import httpx
from nats.js.errors import NotFoundError
from rich.console import Console
from rich.table import Table

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.process import free_port
from adapters.nats.streams import EVENTS_STREAM, connect, ensure_streams
from application.commands import ScheduleLesson
from application.contracts.mapping import to_envelope
from bench.rebuild import load_notifications, raw_read_rate, rebuild_rate
from domain.enrollment import Enrollment
from domain.student import StudentProfile
from entrypoints import bootstrap
from tests.integration.helpers import lesson_with_enrollments, make_relay, relay_all
from tests.servers import scratch_dir
from tests.stack import club_env, wait_ready

RUNS = 3
HTTP_REQUESTS = 400  # per run, shared by the clients
RELAY_BACKLOG = 5_000  # enrollments; each adds one published event
REBUILD_NOTIFICATIONS = 100_000
RESULTS = Path(__file__).parent / "results" / "latest.json"


def timed(work: Callable[[], int]) -> float:
    """Operations per second of one run of `work`, which returns its count."""
    start = time.perf_counter()
    count = work()
    return count / (time.perf_counter() - start)


def series(work: Callable[[], int]) -> list[float]:
    return [timed(work) for _ in range(RUNS)]


def new_lesson(container: bootstrap.Container, capacity: int) -> object:
    return container.app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(), title="Bench", capacity=capacity,
            starts_at=datetime(2027, 1, 1, tzinfo=UTC), price_cents=0,
        )
    )  # fmt: skip


def students(container: bootstrap.Container, n: int) -> list[str]:
    ids = [f"b-{uuid4().hex[:12]}" for _ in range(n)]
    for student_id in ids:
        container.students.save(
            StudentProfile.create(student_id=student_id, email="b@e.org", name="B")
        )
    return ids


def http_enrollments(container, api: str, clients: int) -> Callable[[], int]:
    def work() -> int:
        per_client = HTTP_REQUESTS // clients
        lessons = [new_lesson(container, per_client) for _ in range(clients)]
        who = students(container, per_client * clients)

        def client(i: int) -> int:
            with httpx.Client(base_url=api, timeout=30) as http:
                for student_id in who[i * per_client : (i + 1) * per_client]:
                    response = http.post(
                        f"/lessons/{lessons[i]}/enrollments",
                        json={"student_id": student_id},
                        headers={"Idempotency-Key": str(uuid4())},
                    )
                    assert response.status_code == 201, response.text
            return per_client

        with ThreadPoolExecutor(clients) as pool:
            return sum(pool.map(client, range(clients)))

    return work


def raw_saves(container, clients: int) -> Callable[[], int]:
    """The same two aggregates saved by eventsourcing in-process: the floor."""
    app = container.app

    def work() -> int:
        per_client = HTTP_REQUESTS // clients
        lessons = [new_lesson(container, per_client) for _ in range(clients)]

        def client(i: int) -> int:
            for n in range(per_client):
                lesson = app.get_lesson(lessons[i])
                enrollment_id = uuid4()
                lesson.take_seat(enrollment_id=enrollment_id, student_id=f"r-{n}")
                enrollment = Enrollment.confirm(
                    enrollment_id=enrollment_id, lesson_id=lesson.id,
                    student_id=f"r-{n}", request_id=str(enrollment_id),
                )  # fmt: skip
                app.save(lesson, enrollment)
            return per_client

        with ThreadPoolExecutor(clients) as pool:
            return sum(pool.map(client, range(clients)))

    return work


async def fresh_stream(js) -> None:
    with contextlib.suppress(NotFoundError):  # absent is fine
        await js.delete_stream(EVENTS_STREAM)
    await ensure_streams(js)


def relay_rate(container, database_url: str, nats_url: str) -> list[float]:
    async def one() -> float:
        nc = await connect(nats_url, name="bench-relay")
        js = nc.jetstream()
        await fresh_stream(js)
        relay = make_relay(container, js, database_url, name=f"bench-{uuid4().hex[:6]}")
        start = time.perf_counter()
        await relay_all(relay)
        elapsed = time.perf_counter() - start
        count = (await js.stream_info(EVENTS_STREAM)).state.messages
        await nc.close()
        return count / elapsed

    return [asyncio.run(one()) for _ in range(RUNS)]


def raw_publish_rate(container, nats_url: str) -> list[float]:
    notifications = container.app.recorder.select_notifications(start=1, limit=10**7)
    envelopes = [
        e for n in notifications
        if (e := to_envelope(container.app.mapper.to_domain_event(n))) is not None
    ]  # fmt: skip
    prepared = [
        (e.subject, e.to_json(), {"Nats-Msg-Id": str(e.event_id),
         "Club-Event-Type": e.type, "Club-Schema-Version": "1"})
        for e in envelopes
    ]  # fmt: skip

    async def one() -> float:
        nc = await connect(nats_url, name="bench-raw")
        js = nc.jetstream()
        await fresh_stream(js)
        start = time.perf_counter()
        for i in range(0, len(prepared), 500):
            futures = [
                await js.publish_async(s, b, headers=h)
                for s, b, h in prepared[i : i + 500]
            ]
            await asyncio.gather(*futures)
        elapsed = time.perf_counter() - start
        await nc.close()
        return len(prepared) / elapsed

    return [asyncio.run(one()) for _ in range(RUNS)]


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    root = scratch_dir("club-bench-")
    pg = EmbeddedPostgres(root / "pg")  # durable, as shipped
    nats = EmbeddedNats(root / "nats", sync_always=True)
    database_url, nats_url = pg.start(), nats.start()
    results: dict[str, dict] = {}
    api_proc = None
    try:
        bootstrap.migrate_database(database_url)
        asyncio.run(_migrate(nats_url))
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
    report(results)
    return 0


async def _migrate(nats_url: str) -> None:
    nc = await connect(nats_url, name="bench-migrate")
    await bootstrap.migrate_broker(nc.jetstream())
    await nc.close()


def report(results: dict[str, dict]) -> None:
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
    RESULTS.write_text(
        json.dumps(
            {
                "machine": machine,
                "runs": RUNS,
                "when": datetime.now(UTC).isoformat(),
                "nats_sync_interval": "always",
                "results": results,
            },
            indent=2,
        )
    )
    print(f"written to {RESULTS}")


def _cores() -> int:
    return os.cpu_count() or 0


if __name__ == "__main__":
    sys.exit(main())
