"""Confirmation e-mails through the real chain: relay, JetStream, the notifications
worker, and the e-mail sandbox as a real process with its fault knobs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from adapters.nats.dlq import dead_letters
from adapters.nats.replay import ReplayRequest, replay
from adapters.nats.worker import Worker
from adapters.postgres.owners import owner_of, set_owner
from adapters.postgres.tables import notifications
from adapters.providers.email_http import HttpEmailProvider
from application.notifications import RetryPolicy
from entrypoints import work_classes
from entrypoints.http import create_app
from tests.integration.helpers import (
    lesson_with_enrollments,
    make_relay,
    relay_all,
    with_js,
)
from tests.integration.sandbox_process import SandboxProcess
from tests.servers import scratch_dir

FAST = RetryPolicy(max_attempts=12, first_delay=0.05, max_delay=0.3, unknown_delay=0.05)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxProcess]:
    process = SandboxProcess(scratch_dir("club-notify-sandbox-") / "data")
    process.start()
    yield process
    process.stop()


@pytest.fixture
def provider(sandbox) -> Iterator[HttpEmailProvider]:
    sandbox.reset_knobs()
    client = HttpEmailProvider(sandbox.url, read_timeout_s=2.0)
    yield client
    client.close()
    sandbox.reset_knobs()


def accepted(sandbox: SandboxProcess) -> list[dict]:
    response = httpx.get(f"{sandbox.url}/messages", timeout=10)
    assert response.status_code == 200
    body = response.json()
    return body["messages"] if isinstance(body, dict) else body


def states(container) -> dict[str, int]:
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(notifications.c.state, sa.func.count()).group_by(
                notifications.c.state
            )
        )
        return dict(rows.all())


async def work_until(js, container, provider, done, *, policy=FAST, seconds=60):
    """Run the notifications worker until `done()` holds (or fail after `seconds`)."""
    worker = Worker(
        name=work_classes.NOTIFICATIONS,
        js=js,
        job=work_classes.notification_job(container, provider, policy),
        owner=lambda: owner_of(container.engine, work_classes.NOTIFICATIONS),
        concurrency=4,
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        for _ in range(int(seconds * 10)):
            if await asyncio.to_thread(done):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"not done within {seconds}s: {states(container)}")
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)


def publish_enrollments(container, database_url: str, nats_url: str, n: int) -> None:
    lesson_with_enrollments(container, n)

    async def body(js, _nc) -> None:
        await relay_all(make_relay(container, js, database_url))

    asyncio.run(with_js(nats_url, body))


def sent_for_every_enrollment(sandbox, container, expected: int):
    def check() -> bool:
        return states(container).get("sent", 0) >= expected

    return check


def test_every_enrollment_gets_exactly_one_email_despite_faults(
    migrated, container, sandbox, provider
) -> None:
    """30% of sends fail with 503, 10% are accepted and their reply dropped."""
    database_url, nats_url = migrated
    before = len(accepted(sandbox))
    sandbox.set_knobs(fail_rate=0.3, drop_rate=0.1)
    publish_enrollments(container, database_url, nats_url, 40)

    async def body(js, _nc) -> None:
        await work_until(
            js, container, provider, sent_for_every_enrollment(sandbox, container, 40)
        )

    asyncio.run(with_js(nats_url, body))
    assert len(accepted(sandbox)) - before == 40  # one each: none lost, none doubled
    assert states(container) == {"sent": 40}
    with container.engine.connect() as conn:
        enrollment_id = conn.execute(sa.select(notifications.c.enrollment_id)).scalar()
    with TestClient(create_app(container)) as api:
        shown = api.get(f"/enrollments/{enrollment_id}").json()["notification"]
    assert shown["state"] == "sent"
    assert shown["kind"] == "confirmation"
    assert shown["attempts"] >= 1
    assert shown["sent_at"]


def test_a_permanent_refusal_is_dead_lettered_then_replayed_once(
    migrated, container, sandbox, provider
) -> None:
    database_url, nats_url = migrated
    set_owner(container.engine, work_classes.NOTIFICATIONS, "team-mail")
    sandbox.set_knobs(fail_rate=1.0, fail_status=400)
    publish_enrollments(container, database_url, nats_url, 1)

    def dead_lettered() -> bool:
        return states(container).get("dead-lettered", 0) == 1

    async def body(js, _nc) -> None:
        await work_until(js, container, provider, dead_lettered)
        [entry] = [e async for e in dead_letters(js, work_classes.NOTIFICATIONS)]
        assert entry.owner == "team-mail"
        assert "400" in entry.reason
        assert entry.original_subject.endswith("EnrollmentConfirmed")
        with TestClient(create_app(container, nats_url)) as api:
            scraped = api.get("/metrics").text
        assert 'club_dlq_messages{consumer="notifications"} 1.0' in scraped
        assert 'club_dlq_oldest_age_seconds{consumer="notifications"}' in scraped
        sandbox.reset_knobs()  # the cause is fixed
        before = len(accepted(sandbox))
        request = ReplayRequest(
            consumer=work_classes.NOTIFICATIONS,
            operator="test",
            reason="provider fixed",
            batch=10,
            rate_per_s=5,
        )
        first = await replay(js, container.engine, request)
        assert first.replayed == 1
        await work_until(
            js, container, provider, lambda: set(states(container)) == {"sent"}
        )
        assert len(accepted(sandbox)) == before + 1  # delivered once
        second = await replay(js, container.engine, request)
        assert second.replayed == 0  # nothing left: a second replay changes nothing
        await asyncio.sleep(1)
        assert len(accepted(sandbox)) == before + 1

    asyncio.run(with_js(nats_url, body))
