"""The notifications worker killed at random and at its named crash points.

docs/background.md §34: delivering a message and changing the outside world once are
different
guarantees. The sandbox provider honours the idempotency key derived from the event
id, and the worker records `sending` before each call and looks an unknown outcome
up before any resend, so killing workers never loses an e-mail nor sends one twice.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.facts import enroll, setup_lesson
from tests.faults.killer import Killer
from tests.faults.workload import Enroller
from tests.integration.helpers import email_states
from tests.integration.sandbox_process import SandboxProcess
from tests.stack import FAST_FAULTS, Stack, eventually, running_stack, scratch_for

ENROLLMENTS = 150


@pytest.fixture(scope="module")
def stack(migrated, email_sandbox, request) -> Iterator[Stack]:
    env = FAST_FAULTS | {"CLUB_EMAIL_PROVIDER_URL": email_sandbox.url}
    logs = scratch_for(request, "logs")
    with running_stack(migrated, logs, ("api", "relay"), **env) as stack:
        yield stack


def accepted(sandbox: SandboxProcess) -> int:
    return int(sandbox.listed(limit=10_000)["total"])


def test_workers_killed_at_random_send_every_email_exactly_once(
    stack, email_sandbox, container
) -> None:
    before = accepted(email_sandbox)
    workers = ["worker-1", "worker-2"]
    for name in workers:
        stack.start(name, role="worker")
    # Every 1-2.5 s: long enough for a restarted worker to get back to work on a
    # loaded machine, short enough to land in the middle of sends.
    killer = Killer(stack, workers, pause=(1.0, 2.5), role="worker")
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
    eventually(lambda: email_states(container) == {"sent": ENROLLMENTS}, timeout=180)
    assert accepted(email_sandbox) - before == ENROLLMENTS  # one e-mail per enrollment
    for name in workers:
        stack.stop(name)


@pytest.mark.parametrize("point", ["worker.after_accept", "worker.after_commit"])
def test_a_worker_killed_at_a_crash_point_sends_once(
    stack, email_sandbox, container, point
) -> None:
    lesson_id, student = setup_lesson(stack.base)
    before = accepted(email_sandbox)
    sent_before = email_states(container).get("sent", 0)
    stack.start("worker", CLUB_CRASH_AT=point)
    assert enroll(stack.base, lesson_id, student, f"k-{point}").status_code == 201
    assert stack.died("worker", timeout=30) == -9  # SIGKILLed itself at the point
    assert accepted(email_sandbox) - before == 1  # the provider holds the message
    at_crash = email_states(container)
    if point == "worker.after_accept":
        assert at_crash.get("sending") == 1  # `sent` never committed
    else:
        assert at_crash.get("sent", 0) == sent_before + 1  # committed, not acked
    stack.start("worker")
    eventually(lambda: email_states(container).get("sent", 0) == sent_before + 1, 60)
    assert "sending" not in email_states(container)
    # Looked up or recognised: never resent.
    assert accepted(email_sandbox) - before == 1
    stack.stop("worker")
