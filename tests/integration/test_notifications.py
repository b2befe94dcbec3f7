"""Confirmation e-mails through the real chain: relay, JetStream, the notifications
worker, and the e-mail sandbox as a real process with its fault knobs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from fastapi.testclient import TestClient

from adapters.nats.dlq import dead_letters
from adapters.nats.streams import EVENTS_STREAM
from adapters.nats.worker import Job, ensure_worker_consumer
from adapters.postgres.tables import first_failures, notifications
from application.commands import CancelEnrollment
from application.dlq_owners import DlqOwners
from application.notifications import RetryPolicy
from entrypoints.config.settings import Settings
from entrypoints.runtime import bootstrap, work_classes
from entrypoints.runtime.api import create_app
from tests.identity import ADMIN, VERIFIER
from tests.integration.helpers import (
    email_states,
    email_states_of,
    lesson_with_enrollments,
    make_relay,
    relay_all,
    scrape,
    with_js,
    worker_for,
    working,
)
from tests.integration.sandbox_process import SandboxProcess

FAST = RetryPolicy(max_attempts=12, first_delay=0.05, max_delay=0.3, unknown_delay=0.05)
# One configuration, two owners for one consumer's two event types (and the rest).
OWNER_RULES = (
    "notifications/EnrollmentConfirmed=team-mail,"
    "notifications/EnrollmentCancelled=team-retention,*=club-ops"
)


def owners(rules: str = OWNER_RULES) -> DlqOwners:
    """As a deployment configures them: CLUB_DLQ_OWNERS, read by Settings."""
    return Settings.from_env({"CLUB_DLQ_OWNERS": rules}).dlq_owners


def accepted(sandbox: SandboxProcess) -> list[dict]:
    return list(sandbox.listed()["messages"])


async def work_until(
    js, container, provider, done, *, policy=FAST, seconds=60, worker=None, job=None
):
    """Run the notifications worker until `done()` holds (or fail after `seconds`)."""
    job = job or work_classes.notification_job(container, provider, policy)
    async with working(worker or worker_for(container, js, job, owners=owners())):
        for _ in range(int(seconds * 10)):
            if await asyncio.to_thread(done):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"not done within {seconds}s: {email_states(container)}")


def publish_enrollments(container, database_url: str, nats_url: str, n: int) -> None:
    lesson_with_enrollments(container, n)

    async def body(js, nc) -> None:
        await relay_all(make_relay(container, nc, database_url))

    asyncio.run(with_js(nats_url, body))


def sent_for_every_enrollment(sandbox, container, expected: int):
    def check() -> bool:
        return email_states(container).get("sent", 0) >= expected

    return check


def test_every_enrollment_gets_exactly_one_email_despite_faults(
    migrated, container, email_sandbox, email_provider
) -> None:
    """30% of sends fail with 503, 10% are accepted and their reply dropped."""
    database_url, nats_url = migrated
    before = len(accepted(email_sandbox))
    email_sandbox.set_knobs(fail_rate=0.3, drop_rate=0.1)
    publish_enrollments(container, database_url, nats_url, 40)

    async def body(js, nc) -> None:
        await work_until(
            js,
            container,
            email_provider,
            sent_for_every_enrollment(email_sandbox, container, 40),
        )

    asyncio.run(with_js(nats_url, body))
    # One each: none lost, none doubled.
    assert len(accepted(email_sandbox)) - before == 40
    assert email_states(container) == {"sent": 40}
    with container.engine.connect() as conn:
        enrollment_id = conn.execute(sa.select(notifications.c.enrollment_id)).scalar()
    with TestClient(create_app(container, verifier=VERIFIER), headers=ADMIN) as api:
        shown = api.get(f"/enrollments/{enrollment_id}").json()["notification"]
    assert shown["state"] == "sent"
    assert shown["kind"] == "confirmation"
    assert shown["attempts"] >= 1
    assert shown["sent_at"]


def test_a_permanent_refusal_is_dead_lettered_then_replayed_once(
    migrated, container, email_sandbox, email_provider
) -> None:
    database_url, nats_url = migrated
    email_sandbox.set_knobs(fail_rate=1.0, fail_status=400)
    publish_enrollments(container, database_url, nats_url, 1)

    def dead_lettered() -> bool:
        return email_states(container).get("dead-lettered", 0) == 1

    async def body(js, nc) -> None:
        await work_until(js, container, email_provider, dead_lettered)
        [entry] = [e async for e in dead_letters(js, work_classes.NOTIFICATIONS)]
        assert entry.owner == "team-mail"
        assert "400" in entry.reason
        assert entry.original_subject.endswith("EnrollmentConfirmed")
        with TestClient(create_app(container, nats_url, verifier=VERIFIER)) as api:
            scraped = scrape(api)
        assert 'club_dlq_messages{consumer="notifications"} 1.0' in scraped
        assert 'club_dlq_oldest_age_seconds{consumer="notifications"}' in scraped
        email_sandbox.reset_knobs()  # the cause is fixed
        before = len(accepted(email_sandbox))
        replay_argv = (
            "dlq", "replay", "--consumer", "notifications",
            "--batch", "10", "--rate", "5", "--reason", "provider fixed",
        )  # fmt: skip
        first = await asyncio.to_thread(club, migrated, *replay_argv)
        assert first.returncode == 0, first.stderr
        assert "handed back 1 of notifications's dead letters" in first.stdout
        await work_until(
            js,
            container,
            email_provider,
            lambda: set(email_states(container)) == {"sent"},
        )
        assert len(accepted(email_sandbox)) == before + 1  # delivered once
        second = await asyncio.to_thread(club, migrated, *replay_argv)
        assert "handed back 0" in second.stdout  # a second replay changes nothing
        await asyncio.sleep(1)
        assert len(accepted(email_sandbox)) == before + 1

    asyncio.run(with_js(nats_url, body))


def club(migrated, *args: str) -> subprocess.CompletedProcess[str]:
    database_url, nats_url = migrated
    env = {
        **os.environ,
        "CLUB_DATABASE_URL": database_url,
        "CLUB_NATS_URL": nats_url,
        "COLUMNS": "250",  # the table's columns unabridged
    }
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


async def remove_entries(js, event_ids: set[str]) -> None:
    """This test's entries out of the DLQ, so later tests count their own."""
    async for entry in dead_letters(js, work_classes.NOTIFICATIONS):
        if entry.event_id in event_ids:
            await js.delete_msg("CLUB_DLQ", entry.dlq_seq)


def test_one_consumers_two_event_types_are_dead_lettered_under_two_owners(
    migrated, container, email_sandbox, email_provider
) -> None:
    """The worker as bootstrap builds it from the settings; `club dlq list` shows
    each entry's owner by its event type."""
    database_url, nats_url = migrated
    settings = Settings.from_env({"CLUB_DLQ_OWNERS": OWNER_RULES})
    email_sandbox.set_knobs(fail_rate=1.0, fail_status=400)  # refused for good
    lesson_id = lesson_with_enrollments(container, 1)
    [enrollment_id] = container.app.get_lesson(lesson_id).seats
    container.app.cancel_enrollment(CancelEnrollment(enrollment_id=enrollment_id))

    def both_dead_lettered() -> bool:
        states = email_states_of(container, enrollment_id)
        return states == ["dead-lettered", "dead-lettered"]

    async def body(js, nc) -> tuple[dict[str, str], set[str]]:
        await relay_all(make_relay(container, nc, database_url))
        worker = bootstrap.build_worker(
            settings,
            container,
            nc,
            name=work_classes.NOTIFICATIONS,
            email=email_provider,
        )
        await work_until(
            js, container, email_provider, both_dead_lettered, worker=worker
        )
        ours = {
            e.original_subject.rsplit(".", 1)[-1]: e
            async for e in dead_letters(js, work_classes.NOTIFICATIONS)
            if str(enrollment_id) in e.data.decode()
        }
        by_type = {kind: e.owner for kind, e in ours.items()}
        return by_type, {e.event_id for e in ours.values()}

    by_type, event_ids = asyncio.run(with_js(nats_url, body))
    assert by_type == {
        "EnrollmentConfirmed": "team-mail",
        "EnrollmentCancelled": "team-retention",
    }
    listed = club(migrated, "dlq", "list", "--consumer", "notifications")
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if "Enrollment" in line]
    owner_of_row = {
        kind: owner
        for line in rows
        for kind in ("EnrollmentConfirmed", "EnrollmentCancelled")
        for owner in ("team-mail", "team-retention")
        if kind in line and owner in line
    }
    assert owner_of_row == by_type, listed.stdout
    asyncio.run(with_js(nats_url, lambda js, _nc: remove_entries(js, event_ids)))


def test_the_first_failure_is_the_first_attempt_not_the_store_time(
    migrated, container, email_sandbox, email_provider
) -> None:
    """Two failed attempts, then the DLQ: its first failure time lies between the
    first and second attempt, seconds after the event was stored."""
    database_url, nats_url = migrated
    email_sandbox.set_knobs(fail_rate=1.0, fail_status=503)  # passing, every time
    lesson_id = lesson_with_enrollments(container, 1)
    [enrollment_id] = container.app.get_lesson(lesson_id).seats
    inner = work_classes.notification_job(
        container,
        email_provider,
        RetryPolicy(max_attempts=2, first_delay=0.5, max_delay=0.5),
    )
    attempts: list[datetime] = []

    async def timed(envelope, replayed: bool):
        if envelope.type == "EnrollmentConfirmed" and str(enrollment_id) in str(
            envelope.data
        ):
            attempts.append(datetime.now(UTC))
        return await inner(envelope, replayed)

    job: Job = timed

    def dead_lettered() -> bool:
        return email_states_of(container, enrollment_id) == ["dead-lettered"]

    async def body(js, nc):
        await relay_all(make_relay(container, nc, database_url))
        await asyncio.sleep(2.0)  # stored well before the first attempt
        await work_until(js, container, email_provider, dead_lettered, job=job)
        [entry] = [
            e
            async for e in dead_letters(js, work_classes.NOTIFICATIONS)
            if str(enrollment_id) in e.data.decode()
        ]
        return entry

    entry = asyncio.run(with_js(nats_url, body))
    stored = datetime.fromisoformat(entry.headers["Club-Original-Stored-At"])
    assert entry.deliveries == 2
    assert len(attempts) == 2
    assert entry.first_failed_at is not None
    assert attempts[0] <= entry.first_failed_at <= attempts[1]
    assert entry.first_failed_at - stored >= timedelta(seconds=1.9)
    assert entry.first_failed_at <= entry.last_failed_at
    listed = club(migrated, "dlq", "list", "--json", "--consumer", "notifications")
    shown = [json.loads(line) for line in listed.stdout.splitlines()]
    [ours] = [e for e in shown if e["event_id"] == entry.event_id]
    assert ours["first_failed_at"] == entry.first_failed_at.isoformat()
    with container.engine.connect() as conn:
        kept = conn.execute(
            sa.select(first_failures).where(
                first_failures.c.consumer == work_classes.NOTIFICATIONS,
                first_failures.c.stream_seq == entry.original_seq,
            )
        ).all()
    assert kept == []  # forgotten once dead-lettered
    asyncio.run(with_js(nats_url, lambda js, _nc: remove_entries(js, {entry.event_id})))


class Counted:
    """The e-mail provider, counting the calls each kind of step makes."""

    def __init__(self, provider) -> None:
        self.provider = provider
        self.sends = self.lookups = 0

    def send(self, message, idempotency_key):
        self.sends += 1
        return self.provider.send(message, idempotency_key)

    def status(self, idempotency_key):
        self.lookups += 1
        return self.provider.status(idempotency_key)


def test_a_send_slower_than_ack_wait_is_not_handed_to_a_second_slot(
    migrated, container, email_sandbox, email_provider
) -> None:
    """The notifications worker as wired beats while its send runs: a provider
    answering in 1.7 s (inside the client's 2 s read timeout) under a 1 s ack_wait
    is sent to once, and no second slot gets the message meanwhile (it would find
    `sending` and look the outcome up)."""
    database_url, nats_url = migrated
    settings = Settings.from_env(
        {"CLUB_ACK_WAIT_SECONDS": "1", "CLUB_DATABASE_URL": database_url}
    )
    name = "notifications-beat"
    counted = Counted(email_provider)
    email_sandbox.set_knobs(latency_ms=1700)
    publish_enrollments(container, database_url, nats_url, 1)

    async def body(js, nc) -> None:
        await ensure_worker_consumer(js, name, "club.events.>", ack_wait=1)
        notifications = work_classes.NOTIFICATIONS
        worker = bootstrap.build_worker(
            settings, container, nc, name=notifications, email=counted
        )
        worker.name = name  # the same wiring, on a durable of this test's own
        async with working(worker):
            for _ in range(300):
                info = await js.consumer_info(EVENTS_STREAM, name)
                if counted.sends and not info.num_ack_pending:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(2)  # a redelivery would have come by now

    try:
        asyncio.run(with_js(nats_url, body))
    finally:
        email_sandbox.reset_knobs()
    assert (counted.sends, counted.lookups) == (1, 0)
