"""The notifications worker killed at random and at its named crash points.

docs/background.md §34: delivering a message and changing the outside world once are
different
guarantees. The sandbox provider honours the idempotency key derived from the event
id, and the worker records `sending` before each call and looks an unknown outcome
up before any resend, so killing workers never loses an e-mail nor sends one twice.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from adapters.postgres.tables import notifications
from tests.faults.facts import enroll, setup_lesson
from tests.faults.workload import Enroller
from tests.integration.sandbox_process import SandboxProcess
from tests.servers import scratch_dir
from tests.stack import FAST_FAULTS, Stack, eventually

ENROLLMENTS = 150


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxProcess]:
    process = SandboxProcess(scratch_dir("club-worker-sandbox-") / "data")
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def stack(migrated, sandbox) -> Iterator[Stack]:
    env = FAST_FAULTS | {"CLUB_EMAIL_PROVIDER_URL": sandbox.url}
    stack = Stack(*migrated, scratch_dir("club-worker-logs-"), **env)
    stack.start("api")
    stack.start("relay")
    yield stack
    stack.stop_all()


def accepted(sandbox: SandboxProcess) -> int:
    body = httpx.get(f"{sandbox.url}/messages", params={"limit": 10_000}, timeout=10)
    return int(body.json()["total"])


def states(container) -> dict[str, int]:
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(notifications.c.state, sa.func.count()).group_by(
                notifications.c.state
            )
        )
        return dict(rows.all())


class Killer(threading.Thread):
    """SIGKILLs one of the workers every 1-2.5 s and starts it again: long enough
    for a restarted worker to get back to work on a loaded machine, short enough to
    land in the middle of sends."""

    def __init__(self, stack: Stack, names: list[str]) -> None:
        super().__init__(daemon=True)
        self.stack, self.names = stack, names
        self.kills = 0
        self.stop = threading.Event()
        self.rng = random.Random(0xC1B)

    def run(self) -> None:
        while not self.stop.wait(self.rng.uniform(1.0, 2.5)):
            name = self.rng.choice(self.names)
            self.stack.kill(name)
            self.kills += 1
            self.stack.start(name, role="worker")


def test_workers_killed_at_random_send_every_email_exactly_once(
    stack, sandbox, container
) -> None:
    before = accepted(sandbox)
    workers = ["worker-1", "worker-2"]
    for name in workers:
        stack.start(name, role="worker")
    killer = Killer(stack, workers)
    killer.start()
    workload = Enroller(stack.base, count=ENROLLMENTS)
    workload.start()
    workload.join(180)
    eventually(lambda: killer.kills >= 5, timeout=60)
    killer.stop.set()
    killer.join()
    assert workload.error is None
    assert workload.created == ENROLLMENTS
    assert killer.kills >= 5
    eventually(lambda: states(container) == {"sent": ENROLLMENTS}, timeout=180)
    assert accepted(sandbox) - before == ENROLLMENTS  # one e-mail per enrollment
    for name in workers:
        stack.stop(name)


@pytest.mark.parametrize("point", ["worker.after_accept", "worker.after_commit"])
def test_a_worker_killed_at_a_crash_point_sends_once(
    stack, sandbox, container, point
) -> None:
    lesson_id, student = setup_lesson(stack.base)
    before, sent_before = accepted(sandbox), states(container).get("sent", 0)
    stack.start("worker", CLUB_CRASH_AT=point)
    assert enroll(stack.base, lesson_id, student, f"k-{point}").status_code == 201
    assert stack.died("worker", timeout=30) == -9  # SIGKILLed itself at the point
    assert accepted(sandbox) - before == 1  # the provider holds the message
    at_crash = states(container)
    if point == "worker.after_accept":
        assert at_crash.get("sending") == 1  # `sent` never committed
    else:
        assert at_crash.get("sent", 0) == sent_before + 1  # committed, not acked
    stack.start("worker")
    eventually(lambda: states(container).get("sent", 0) == sent_before + 1, 60)
    assert "sending" not in states(container)
    assert accepted(sandbox) - before == 1  # looked up or recognised: never resent
    stack.stop("worker")
