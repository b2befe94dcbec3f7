"""The drain after an outage: the seed's backlog, made by the provider going down.

The worker runs all along (as deployed), with a retry schedule shorter than the
outage (CLUB_NOTIFY_MAX_ATTEMPTS=3: about 3 s of retries). The provider goes
`down`; 600 enrollments arrive and queue behind its open circuit; the outage lasts
OUTAGE_S, several times the schedule; then the provider is back, and 80
enrollments a second keep arriving while it accepts at most 100 a second. Measured:
from the provider's return (the knob flipped) until the queue is back to what
steady flow holds, beside the capacity model's drain time (`application.capacity.
plan`: 600 / (100 - 80) = 30 s) plus the wait for the circuit's next probe
(at most CLUB_NOTIFY_PROBE_SECONDS). Also counted: e-mails accepted once each,
dead letters (0 is the promise).
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from adapters.postgres.tables import notifications
from application.capacity import plan
from bench.callers import students_authorizations
from bench.common import new_lesson, role, students
from bench.drain import drained_at, steady_level
from bench.http import steady_posts
from bench.jobs import (
    ARRIVAL_PER_S,
    ARRIVING_S,
    BACKLOG,
    PROVIDER_LIMIT_PER_S,
    STARTING_S,
    STEADY_S,
    _in_background,
    _seconds,
    accepted_times,
    busiest_second,
    email_sandbox,
    sent,
    unsent,
    unsent_after,
)
from entrypoints.runtime import bootstrap

OUTAGE_S = 30.0  # ten times the retry schedule below
PROBE_S = 10.0  # CLUB_NOTIFY_PROBE_SECONDS' default
OUTAGE_ENV = {
    "CLUB_NOTIFY_MAX_ATTEMPTS": "3",
    "CLUB_NOTIFY_PROBE_SECONDS": str(PROBE_S),
    "CLUB_EMAIL_RATE_PER_S": str(PROVIDER_LIMIT_PER_S),
}


def outage_drain(
    container: bootstrap.Container, url: str, nats_url: str, scratch: Path
) -> dict[str, float]:
    arriving = int(ARRIVAL_PER_S * ARRIVING_S)
    lesson = new_lesson(container.app, BACKLOG + arriving)
    who = students(container, BACKLOG + arriving)
    tokens = students_authorizations(who)
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    with (
        email_sandbox(scratch / "sandbox-outage") as sandbox,
        role(url, nats_url, "api", CLUB_HTTP_PORT=str(port)),
        role(url, nats_url, "relay"),
        role(
            url, nats_url, "worker", "notifications",
            CLUB_EMAIL_PROVIDER_URL=sandbox, **OUTAGE_ENV,
        ),
    ):  # fmt: skip
        wait_ready(api, STARTING_S)
        _knobs(sandbox, down=True)
        down_at = time.monotonic()
        steady_posts(api, lesson, who[:BACKLOG], rate=200, authorizations=tokens)
        time.sleep(max(0.0, down_at + OUTAGE_S - time.monotonic()))  # the outage
        held_s = time.monotonic() - down_at
        dead_during = _dead_lettered(container, who)
        _knobs(sandbox, down=False)
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
        first_out: float | None = None
        while arrivals.is_alive():
            accepted = sent(container, who)
            since = time.monotonic() - back  # after the count, as in bench.jobs
            due = min(BACKLOG + int(since * ARRIVAL_PER_S), BACKLOG + arriving)
            if first_out is None and accepted:
                first_out = since
            trace.append((since, due - accepted))
            time.sleep(0.1)
        left = unsent_after(lambda: unsent(container, len(who), who), 180)
        times = accepted_times(sandbox)
    model = plan(
        backlog=BACKLOG,
        arrival_rate=ARRIVAL_PER_S,
        service_rate=PROVIDER_LIMIT_PER_S,
    ).drain_seconds
    drained = drained_at(trace, STEADY_S, most_in_flight=int(ARRIVAL_PER_S))
    return {
        "outage_s": held_s,
        "model_s": model,
        "model_with_probe_s": model + PROBE_S,
        "measured_s": _seconds(drained),
        "back_to_first_email_s": _seconds(first_out),
        "steady_queue": float(steady_level(trace, STEADY_S)),
        "accepted": float(len(times)),
        "enrollments": float(len(who)),
        "dead_letters": float(_dead_lettered(container, who)),
        "dead_letters_during_outage": float(dead_during),
        "busiest_second": float(busiest_second(times)),
        "unsent_after_wait": float(left),
    }


def _knobs(sandbox: str, **knobs: object) -> None:
    answered = httpx.put(f"{sandbox}/knobs", json=knobs, timeout=10)
    answered.raise_for_status()


def _dead_lettered(container: bootstrap.Container, who: list[str]) -> int:
    ours = sa.cast(sa.bindparam("who", list(who)), ARRAY(sa.Text))
    with container.engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count())
                .select_from(notifications)
                .where(
                    (notifications.c.state == "dead-lettered")
                    & (notifications.c.student_id == sa.any_(ours))
                )
            ).scalar_one()
        )
