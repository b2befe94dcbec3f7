"""An e-mail provider down for longer than a message's whole retry schedule.

Issue 22's done-when, tried from outside: two notifications worker processes, the
e-mail sandbox answering every request `503` (`down`) for five times the retry
schedule (3 attempts under a 1 s, then 2 s ceiling). The shared circuit opens, no
slot of either process takes a message meanwhile (the durable's delivered count
stands still), one process at a time probes, and when the provider is back every
e-mail is sent exactly once (the sandbox's `GET /messages`), with no dead letter.
A refusal of one message (a 400) still goes to the DLQ at once, and the circuit
stays closed: an answer is not an outage."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters.nats.dlq import dead_letters
from adapters.nats.streams import EVENTS_STREAM
from adapters.postgres.provider_circuits import SqlProviderCircuits
from adapters.postgres.tables import notifications
from application.provider_circuit import CircuitView
from tests.faults.workload import Enroller
from tests.integration.helpers import email_states, run, with_js
from tests.integration.sandbox_process import SandboxProcess
from tests.stack import FAST_FAULTS, Stack, eventually, running_stack, scratch_for

ENROLLMENTS = 20
PROBE_S = 1.0
OUTAGE_S = 15.0  # the whole retry schedule is ~3 s: five times it
OUTAGE = FAST_FAULTS | {
    "CLUB_NOTIFY_MAX_ATTEMPTS": "3",
    "CLUB_NOTIFY_CIRCUIT_FAILURES": "3",
    "CLUB_NOTIFY_PROBE_SECONDS": str(PROBE_S),
}
WORKERS = ("worker-1", "worker-2")


@pytest.fixture(scope="module")
def stack(migrated, email_sandbox, request) -> Iterator[Stack]:
    env = OUTAGE | {"CLUB_EMAIL_PROVIDER_URL": email_sandbox.url}
    logs = scratch_for(request, "logs")
    with running_stack(migrated, logs, ("api", "relay"), **env) as stack:
        yield stack


@pytest.fixture
def workers(stack: Stack, email_sandbox: SandboxProcess) -> Iterator[tuple[str, ...]]:
    for name in WORKERS:
        stack.start(name, role="worker")
    try:
        yield WORKERS
    finally:
        email_sandbox.reset_knobs()
        for name in WORKERS:
            stack.stop(name)


def email_circuit(container) -> CircuitView | None:
    found = SqlProviderCircuits(container.engine).circuits()
    return next((c for c in found if c.provider == "email"), None)


def is_open(container) -> CircuitView | None:
    view = email_circuit(container)
    return view if view is not None and view.state.open else None


def accepted(sandbox: SandboxProcess) -> int:
    return int(sandbox.listed(limit=10_000)["total"])


def db_now(container) -> datetime:
    with container.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.now())).scalar_one()


def attempts_since(container, since: datetime) -> list[tuple[str, int]]:
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(notifications.c.state, notifications.c.attempts).where(
                notifications.c.created_at >= since
            )
        )
        return [(row.state, row.attempts) for row in rows]


def dead_lettered(nats_url: str) -> int:
    async def count(js, _nc) -> int:
        return len([e async for e in dead_letters(js, "notifications")])

    return run(with_js(nats_url, count))


def delivered(nats_url: str) -> int:
    """Every delivery the durable made, redeliveries included."""

    async def read(js, _nc) -> int:
        info = await js.consumer_info(EVENTS_STREAM, "notifications")
        return int(info.delivered.consumer_seq)

    return run(with_js(nats_url, read))


def probes(logs: list[Path]) -> int:
    """Probes that met the provider down, in every worker process's log."""
    count = 0
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("{") and json.loads(line).get("event") == (
                "worker.probe_failed"
            ):
                count += 1
    return count


def test_an_outage_longer_than_the_retries_sends_every_email_once_after(
    stack, workers, email_sandbox, container, migrated
) -> None:
    _, nats_url = migrated
    since = db_now(container)
    sent_before = email_states(container).get("sent", 0)
    accepted_before = accepted(email_sandbox)
    letters_before = dead_lettered(nats_url)
    email_sandbox.set_knobs(down=True)

    workload = Enroller(stack.base, count=ENROLLMENTS)
    workload.start()
    workload.join(120)
    assert workload.error is None
    assert workload.created == ENROLLMENTS
    opened = eventually(lambda: is_open(container), timeout=60)

    # Measured, not awaited: the outage lasts this long whatever Club does. Its
    # first seconds let the messages in hand when it opened be put back.
    time.sleep(3)
    delivered_at_start = delivered(nats_url)
    probes_at_start = probes([stack.logs[name] for name in workers])
    started = time.monotonic()
    time.sleep(OUTAGE_S)
    held = time.monotonic() - started

    # Neither process took a message while the circuit was open...
    assert delivered(nats_url) == delivered_at_start
    # ...one probe at a time across both, at the bounded rate...
    made = probes([stack.logs[name] for name in workers]) - probes_at_start
    assert 1 <= made <= held / PROBE_S + 2, made
    # ...and nothing was given up, though the schedule ran out five times over.
    assert dead_lettered(nats_url) == letters_before
    assert "dead-lettered" not in dict(attempts_since(container, since))
    assert is_open(container) is not None
    assert is_open(container).state.opened_at == opened.state.opened_at

    email_sandbox.set_knobs(down=False)
    eventually(
        lambda: email_states(container).get("sent", 0) == sent_before + ENROLLMENTS,
        timeout=60,
    )
    assert accepted(email_sandbox) - accepted_before == ENROLLMENTS  # once each
    assert dead_lettered(nats_url) == letters_before
    assert email_circuit(container).state.open is False
    # No attempt spent while it was open: only the failures that opened it count.
    rows = attempts_since(container, since)
    assert {state for state, _ in rows} == {"sent"}
    assert max(attempts for _, attempts in rows) <= 2, rows


def test_a_refusal_of_one_message_is_dead_lettered_at_once_circuit_closed(
    stack, workers, email_sandbox, container, migrated
) -> None:
    _, nats_url = migrated
    since = db_now(container)
    letters_before = dead_lettered(nats_url)
    email_sandbox.set_knobs(fail_rate=1.0, fail_status=400)
    workload = Enroller(stack.base, count=3)
    started = time.monotonic()
    workload.start()
    workload.join(60)
    assert workload.error is None

    eventually(lambda: dead_lettered(nats_url) == letters_before + 3, timeout=30)
    assert time.monotonic() - started < 20  # promptly: no retry schedule ran
    assert [state for state, _ in attempts_since(container, since)] == [
        "dead-lettered"
    ] * 3
    circuit = email_circuit(container)
    assert circuit is None or (not circuit.state.open and circuit.state.failures == 0)
