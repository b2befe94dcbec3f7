"""Every background role serves /metrics on its own port (issue #13): the relay, a
projector, a worker and the saga run as real processes, each is scraped, and one
enrollment moves the counters of every hop it passes through."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.embedded.process import free_port
from tests.api_client import ClubClient
from tests.integration.sandbox_process import SandboxProcess
from tests.stack import Stack, running_stack, scratch_for
from tests.stack import eventually as soon

# Four roles start at once on a shared two-core machine (other suites run beside):
# each may take tens of seconds to import and reach its servers.
STARTUP_S = 60


def eventually(check: Callable[[], Any]) -> Any:
    return soon(check, timeout=STARTUP_S)


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
ROLES = ("relay", "projector", "worker", "saga")  # the stack's names for them
PROJECTION, WORK_CLASS = "statistics", "notifications"  # what those two run


@pytest.fixture(scope="module")
def stack(
    migrated: tuple[str, str],
    email_sandbox: SandboxProcess,
    request: pytest.FixtureRequest,
) -> Iterator[tuple[Stack, dict[str, int]]]:
    env = {"CLUB_EMAIL_PROVIDER_URL": email_sandbox.url}
    ports = {name: free_port() for name in ROLES}
    logs = scratch_for(request, "logs")
    with running_stack(migrated, logs, ("api",), **env) as stack:
        for name in ROLES:
            stack.start(name, CLUB_METRICS_PORT=str(ports[name]))
        yield stack, ports


def scrape(port: int) -> Samples:
    response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    assert response.status_code == 200, response.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def ready(port: int, name: str, **labels: str) -> Samples | None:
    """The scrape once the role is built and has read its own hop (the port
    answers from start-up, before the role reaches its servers)."""
    try:
        samples = scrape(port)
    except httpx.TransportError:
        return None
    return samples if value(samples, name, **labels) is not None else None


def test_each_role_serves_its_own_hop_and_one_enrollment_moves_them(
    stack: tuple[Stack, dict[str, int]],
) -> None:
    club_stack, ports = stack
    relay = eventually(lambda: ready(ports["relay"], "club_relay_lease_held"))
    projector = eventually(
        lambda: ready(
            ports["projector"], "club_projection_position", projection=PROJECTION
        )
    )
    worker = eventually(
        lambda: ready(ports["worker"], "club_queue_length", queue=WORK_CLASS)
    )
    saga = eventually(
        lambda: ready(ports["saga"], "club_queue_length", queue="saga_deadlines")
    )
    # Each role's own hop, read at the scrape with its own credentials:
    assert value(relay, "club_relay_lag_events") is not None
    assert value(relay, "club_outbox_oldest_unpublished_age_seconds") is not None
    assert value(projector, "club_consumer_lag", consumer=PROJECTION) is not None
    assert value(worker, "club_consumer_lag", consumer=WORK_CLASS) is not None
    assert value(saga, "club_queue_oldest_age_seconds", queue="saga_deadlines") == 0
    # Only the relay holds the lease and publishes:
    eventually(lambda: value(scrape(ports["relay"]), "club_relay_lease_held") == 1)
    published = value(scrape(ports["relay"]), "club_events_published_total") or 0

    def applied(role: str, consumer: str) -> float:
        samples = scrape(ports[role])
        return value(samples, "club_events_applied_total", consumer=consumer) or 0

    applied_before = applied("projector", PROJECTION), applied("worker", WORK_CLASS)
    with ClubClient(club_stack.base, timeout=10) as club:
        lesson_id = club.lesson(capacity=2)
        assert club.enroll(lesson_id, club.student()).status_code == 201

    # The lesson and the enrollment: at least two events through every hop.
    eventually(
        lambda: (
            (value(scrape(ports["relay"]), "club_events_published_total") or 0)
            >= published + 2
        )
    )
    eventually(lambda: applied("projector", PROJECTION) >= applied_before[0] + 2)
    eventually(lambda: applied("worker", WORK_CLASS) >= applied_before[1] + 2)

    projector = scrape(ports["projector"])
    waited = value(projector, "club_consumer_wait_seconds_count", consumer=PROJECTION)
    assert (waited or 0) >= 2  # each event's wait since the stream stored it
    assert value(projector, "club_duplicates_skipped_total", consumer=PROJECTION) == 0
    worker = scrape(ports["worker"])
    sent = value(
        worker, "club_provider_call_seconds_count", provider="email", outcome="ok"
    )
    assert (sent or 0) >= 1  # the confirmation e-mail, timed


def test_each_long_lived_role_freezes_what_it_built(
    stack: tuple[Stack, dict[str, int]],
) -> None:
    """Full collections skip start-up's objects (runtime/startup_heap.py)."""
    club_stack, _ = stack

    def frozen(name: str) -> list[int]:
        lines = club_stack.logs[name].read_text().splitlines()
        events = [json.loads(line) for line in lines if line.startswith("{")]
        return [e["objects"] for e in events if e["event"] == "startup_heap.frozen"]

    for name in ("api", *ROLES):
        counts = eventually(lambda name=name: frozen(name) or None)
        assert len(counts) == 1, (name, counts)
        assert counts[0] > 10_000, (name, counts)  # the import graph, at least


def test_a_metrics_port_taken_is_one_line_and_exit_2(
    stack: tuple[Stack, dict[str, int]],
) -> None:
    club_stack, ports = stack
    club_stack.start(
        "second-relay", role="relay", CLUB_METRICS_PORT=str(ports["relay"])
    )
    assert club_stack.died("second-relay", timeout=STARTUP_S) == 2
    log = club_stack.logs["second-relay"].read_text()
    assert f"CLUB_METRICS_PORT={ports['relay']}" in log
    assert "Traceback" not in log
    assert len(log.strip().splitlines()) == 1
