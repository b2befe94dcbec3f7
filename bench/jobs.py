"""The jobs side, as deployed: the e-mail sandbox, `club worker notifications` and
`club worker exports` as processes beside the API and the relay.

- The seed's backlog example (§33) scaled down: 600 notifications queue while the
  provider is down, then 80 enrollments a second keep arriving while the provider
  accepts at most 100 a second. The model says the debt shrinks by 20 a second:
  600 / (100 - 80) = 30 s to drain. Measured: from the provider's return (the
  worker's first e-mail out; the arrivals start then) until the queue (enrollments
  not yet e-mailed) is back to what steady flow holds (`bench/drain.py`).
- 500 queued roster exports beside a steady stream of enrollments: the p95 time from
  an enrollment's commit to its e-mail accepted, which the separate pools keep short.
"""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from uuid import uuid4

import httpx
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from adapters.embedded.process import free_port, wait_or_kill
from adapters.embedded.readiness import wait_ready
from adapters.postgres.tables import notifications
from bench.callers import admin, students_authorizations
from bench.common import new_lesson, role, students
from bench.drain import drained_at, first_at_most, steady_level
from bench.http import steady_posts
from entrypoints.runtime import bootstrap

BACKLOG = 600
ARRIVAL_PER_S = 80.0
PROVIDER_LIMIT_PER_S = 100
STARTING_S = 90  # a role's start on 2 busy cores
ARRIVING_S = 60  # well past the model's 30 s: the last STEADY_S show steady flow
STEADY_S = 10
EXPORTS_RATE = "1000/second"  # CLUB_RATE_LIMIT of the API the exports are asked of


@contextmanager
def email_sandbox(data_dir: Path, **env: str) -> Iterator[str]:
    """`club sandbox email` as a process on a port of its own; yields its URL.
    Each call with a data directory of its own: the sandbox keeps its messages,
    and a run must count its own, not an earlier run's."""
    url = f"http://127.0.0.1:{free_port()}"
    own = data_dir.with_name(f"{data_dir.name}-{uuid4().hex[:8]}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "entrypoints.cli", "sandbox", "email"],
        env={"CLUB_EMAIL_PROVIDER_URL": url, "CLUB_DATA_DIR": str(own), **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_ready(url, STARTING_S, path="/knobs")
        yield url
    finally:
        proc.terminate()
        wait_or_kill(proc, 10)  # one that ignores the request is no later run's load


def unsent(container: bootstrap.Container, total: int, who: Sequence[str]) -> int:
    """Of `total` enrollments by `who` (this run's students: runs share a database),
    how many the provider has not accepted yet."""
    return total - sent(container, who)


def sent(container: bootstrap.Container, who: Sequence[str]) -> int:
    """The e-mails to `who` the provider accepted. One count in the server: the
    bench polls it ten times a second on the same two cores as what it measures."""
    ours = sa.cast(sa.bindparam("who", list(who)), ARRAY(sa.Text))
    with container.engine.connect() as conn:
        count = conn.execute(
            sa.select(sa.func.count())
            .select_from(notifications)
            .where(
                (notifications.c.state == "sent")
                & (notifications.c.student_id == sa.any_(ours))
            )
        ).scalar_one()
    return int(count)


def accepted_times(sandbox: str) -> list[float]:
    body = httpx.get(f"{sandbox}/messages", params={"limit": 10_000}, timeout=30)
    return sorted(
        datetime.fromisoformat(m["accepted_at"]).timestamp()
        for m in body.json()["messages"]
    )


def busiest_second(times: list[float]) -> int:
    """The most acceptances in any window of one second (sliding)."""
    most, start = 0, 0
    for end, moment in enumerate(times):
        while moment - times[start] >= 1.0:
            start += 1
        most = max(most, end - start + 1)
    return most


def backlog_drain(
    container: bootstrap.Container, url: str, nats_url: str, scratch: Path
) -> dict[str, float]:
    """The seed's example, scaled down to 600 queued and 80/s arriving."""
    arriving = int(ARRIVAL_PER_S * ARRIVING_S)
    lesson = new_lesson(container.app, BACKLOG + arriving)
    who = students(container, BACKLOG + arriving)
    tokens = students_authorizations(who)  # each student enrolls itself
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    limit = {"CLUB_EMAIL_RATE_PER_S": str(PROVIDER_LIMIT_PER_S)}
    with (
        email_sandbox(scratch / "sandbox-drain") as sandbox,
        role(url, nats_url, "api", CLUB_HTTP_PORT=str(port)),
        role(url, nats_url, "relay"),
    ):
        wait_ready(api, STARTING_S)
        # Queued: no worker runs yet.
        steady_posts(api, lesson, who[:BACKLOG], rate=200, authorizations=tokens)
        with role(
            url, nats_url, "worker", "notifications",
            CLUB_EMAIL_PROVIDER_URL=sandbox, **limit,
        ):  # fmt: skip
            started = time.monotonic()
            # The provider is back when the worker's first e-mail goes out: its
            # start-up (seconds on two busy cores) is no part of the seed's model,
            # where the workers run all along and only the provider was down.
            _wait_until(
                lambda: unsent(container, BACKLOG, who[:BACKLOG]) < BACKLOG,
                STARTING_S,
                every=0.01,
            )
            back = time.monotonic()
            arrivals = _in_background(
                lambda: steady_posts(
                    api,
                    lesson,
                    who[BACKLOG:],
                    rate=ARRIVAL_PER_S,
                    authorizations=tokens[BACKLOG:],
                )
            )
            trace: list[tuple[float, int]] = []
            while arrivals.is_alive():  # the queue all along, steady flow included
                accepted = sent(container, who)
                # The arrivals due are counted once the count is back: counted
                # before it, an e-mail sent meanwhile had no arrival to match, and
                # a queue keeping up read below zero (-12 in one run).
                since = time.monotonic() - back
                due = min(BACKLOG + int(since * ARRIVAL_PER_S), BACKLOG + arriving)
                trace.append((since, due - accepted))
                time.sleep(0.1)
            left = unsent_after(lambda: unsent(container, len(who), who), 120)
        times = accepted_times(sandbox)
    model = BACKLOG / (PROVIDER_LIMIT_PER_S - ARRIVAL_PER_S)
    drained = drained_at(trace, STEADY_S, most_in_flight=int(ARRIVAL_PER_S))
    one_second = first_at_most(trace, int(ARRIVAL_PER_S))
    return {
        "model_s": model,
        "measured_s": _seconds(drained),
        "steady_queue": float(steady_level(trace, STEADY_S)),
        # The bound measured before this one, one second of arrivals: its model is 26 s.
        "to_one_second_of_arrivals_s": _seconds(one_second),
        "worker_start_s": back - started,  # shown beside, not counted
        "busiest_second": float(busiest_second(times)),
        "limit_per_s": float(PROVIDER_LIMIT_PER_S),
        "unsent_after_wait": float(left),
    }


def email_latency_beside_exports(
    container: bootstrap.Container, url: str, nats_url: str, scratch: Path
) -> dict[str, float]:
    """p95 from an enrollment's commit to its e-mail accepted, 500 exports queued."""
    exports, enrollments = 500, 200
    lesson = new_lesson(container.app, enrollments)
    who = students(container, enrollments)
    tokens = students_authorizations(who)
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    with (
        email_sandbox(scratch / "sandbox-exports") as sandbox,
        role(
            url,
            nats_url,
            "api",
            CLUB_HTTP_PORT=str(port),
            CLUB_DATA_DIR=str(scratch),
            # One admin asks for 500 exports at once: queuing them is the set-up,
            # not what is measured; the default per-caller rate would pace it.
            CLUB_RATE_LIMIT=EXPORTS_RATE,
        ),
        role(url, nats_url, "relay"),
    ):
        wait_ready(api, STARTING_S)
        # The lesson was scheduled in-process, without a teacher: an admin's to export.
        with httpx.Client(base_url=api, timeout=30, headers=admin()) as http:
            for _ in range(exports):
                asked = http.post(f"/lessons/{lesson}/roster-exports")
                assert asked.status_code == 202, asked.text
        with (
            role(url, nats_url, "worker", "exports", CLUB_DATA_DIR=str(scratch)),
            role(
                url, nats_url, "worker", "notifications",
                CLUB_EMAIL_PROVIDER_URL=sandbox,
            ),
        ):  # fmt: skip
            posted = steady_posts(api, lesson, who, rate=20, authorizations=tokens)
            committed = {s: ended for s, (_, ended) in zip(who, posted, strict=True)}
            left = unsent_after(lambda: unsent(container, enrollments, who), 120)
        by_student = _accepted_by_recipient_order(sandbox, who)
    latencies = sorted(by_student[s] - committed[s] for s in who)
    return {
        "p50_s": latencies[len(latencies) // 2],
        "p95_s": latencies[int(len(latencies) * 0.95) - 1],
        "exports_queued": float(exports),
        "unsent_after_wait": float(left),
    }


def _accepted_by_recipient_order(sandbox: str, who: list[str]) -> dict[str, float]:
    """The sandbox sees addresses, not ids: each bench student has its own."""
    body = httpx.get(f"{sandbox}/messages", params={"limit": 10_000}, timeout=30)
    accepted = {
        m["to"]: datetime.fromisoformat(m["accepted_at"]).timestamp()
        for m in body.json()["messages"]
    }
    # One never accepted within the wait is later than any time measured.
    return {s: accepted.get(f"{s}@bench.example", math.inf) for s in who}


def _seconds(moment: float | None) -> float:
    """A moment never reached within the run is later than any time measured:
    infinity keeps the median of three a time, or says never; NaN made it NaN."""
    return math.inf if moment is None else moment


def _in_background(work: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def unsent_after(count: Callable[[], int], timeout: float) -> int:
    """How many e-mails are still unsent once they all went out or `timeout` s
    passed. A machine too slow to drain within the wait is a figure (so many
    left), not a failure of the whole bench; each round runs on a database and a
    broker of its own (bench/run.py:_on_its_own), so what one leaves cannot slow
    the next."""
    deadline = time.monotonic() + timeout
    while (left := count()) > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _wait_until(check: Callable[[], bool], timeout: float, every: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the bench waited too long")
        time.sleep(every)
