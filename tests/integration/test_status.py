"""The chain's status on real PostgreSQL and NATS: a backlog of confirmation e-mails
(no worker running) shows its count, its oldest age and a "late" verdict in
`read_chain`, /ops/status and /metrics; after a worker drains it, "on time".

The tests share the module's servers and run in file order: the backlog the first
one makes is what the next ones show, until the drain test empties it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from uuid import uuid4

import pytest
import sqlalchemy as sa
from eventsourcing.persistence import StoredEvent
from fastapi.testclient import TestClient

from adapters.postgres.tables import notifications
from application.notifications import RetryPolicy
from entrypoints.ops.access import OpsConfig
from entrypoints.ops.chain_status import (
    ChainStatus,
    as_json,
    read_chain,
    read_hop_ages,
)
from entrypoints.ops.view import hop_ages, hop_rows
from entrypoints.runtime import work_classes
from entrypoints.runtime.api import create_app
from entrypoints.runtime.bootstrap import console_reads
from tests.identity import VERIFIER
from tests.integration.helpers import (
    lesson_with_enrollments,
    make_relay,
    relay_all,
    scrape,
    with_js,
    worker_for,
    working,
)

ENROLLED = 6
PROMISE_S = 1.0  # short, so that the test's backlog breaks it within seconds
TOKEN = "status-test-operator-token"  # noqa: S105 - a test value
OPS = OpsConfig(operator_token=TOKEN, promise_seconds=PROMISE_S, email_rate_per_s=100)
FAST = RetryPolicy(max_attempts=5, first_delay=0.05, max_delay=0.3, unknown_delay=0.05)


def chain(container, nats_url: str) -> ChainStatus:
    async def body(js, nc) -> ChainStatus:
        return await read_chain(
            console_reads(container, js),
            promise_seconds=PROMISE_S,
            configured_service_per_s=100,
        )

    return asyncio.run(with_js(nats_url, body))


def queued_for_notifications(nats_url: str) -> int:
    """Every published event the notifications durable's filter takes (it skips
    those that ask for no e-mail, but they wait in line all the same)."""
    subjects = work_classes.WORK_CLASSES[work_classes.NOTIFICATIONS].subjects

    async def body(js, nc) -> int:
        info = await js.stream_info("CLUB_EVENTS", subjects_filter=subjects)
        return sum((info.state.subjects or {}).values())

    return asyncio.run(with_js(nats_url, body))


def sent(container) -> int:
    with container.engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count()).where(notifications.c.state == "sent")
            ).scalar_one()
        )


def test_a_backlog_shows_count_oldest_age_and_a_late_verdict(migrated, container):
    database_url, nats_url = migrated
    lesson_with_enrollments(container, ENROLLED)

    before_relay = chain(container, nats_url)
    # Stored, none published yet: the lesson, and per enrollment its seat taken
    # and its confirmation.
    stored = 1 + 2 * ENROLLED
    assert before_relay.outbox.unpublished == stored
    assert before_relay.outbox.oldest_age_seconds is not None
    assert before_relay.rates.enrollment_events == ENROLLED  # measured arrivals

    asyncio.run(
        with_js(
            nats_url, lambda _, nc: relay_all(make_relay(container, nc, database_url))
        )
    )
    time.sleep(PROMISE_S + 0.5)  # nobody works the queue: the oldest ages
    status = chain(container, nats_url)

    assert status.outbox.unpublished == 0
    assert status.outbox.oldest_age_seconds is None
    queued = queued_for_notifications(nats_url)
    assert queued >= ENROLLED
    queue = status.consumer(work_classes.NOTIFICATIONS)
    assert queue is not None
    assert queue.lag_events == queued
    assert queue.oldest_age_seconds is not None
    assert queue.oldest_age_seconds > PROMISE_S
    delivery = status.delivery
    assert delivery.backlog == queued
    assert delivery.oldest_age_seconds > PROMISE_S
    assert delivery.verdict.startswith("late by ")
    assert delivery.stalled  # nothing was sent in the window: is a worker running?
    assert not delivery.service_measured
    shown = json.loads(json.dumps(as_json(status)))  # plain JSON, no infinities
    assert shown["work_classes"]["notifications"]["queued"] == queued
    assert shown["delivery"]["verdict"].startswith("late by ")
    # Published: the lesson and each confirmation (a seat taken stays internal).
    assert shown["stores"]["streams"]["CLUB_EVENTS"]["messages"] == 1 + ENROLLED
    assert {c["consumer"] for c in shown["consumers"]} >= {"rosters", "statistics"}


def test_the_history_s_lean_read_gives_the_page_s_ages(migrated, container):
    """The /ops sampler reads only each hop's oldest age (read_hop_ages): the same
    hops, the same ages, as the page's whole-chain read (the backlog above)."""
    _, nats_url = migrated

    async def body(js, nc) -> tuple[dict, dict]:
        reads = console_reads(container, js)
        lean = await read_hop_ages(reads)
        whole = await read_chain(
            reads, promise_seconds=PROMISE_S, configured_service_per_s=100
        )
        return lean, hop_ages(hop_rows(as_json(whole)))

    lean, whole = asyncio.run(with_js(nats_url, body))
    assert lean.keys() == whole.keys()
    assert lean["notifications"] is not None  # the backlog waits and ages
    for hop, age in whole.items():
        if age is None:
            assert lean[hop] is None, hop
        else:
            assert lean[hop] == pytest.approx(age, abs=2.0), hop


def test_ops_status_and_metrics_show_the_same_backlog(migrated, container):
    _, nats_url = migrated
    queued = float(queued_for_notifications(nats_url))
    app = create_app(container, nats_url, ops=OPS, verifier=VERIFIER)
    with TestClient(app) as api:
        refused = api.get("/ops/status")
        shown = api.get("/ops/status", headers={"Authorization": f"Bearer {TOKEN}"})
        metrics = scrape(api)
    assert refused.status_code == 401
    assert shown.status_code == 200
    body = shown.json()
    assert body["delivery"]["backlog"] == queued
    assert body["delivery"]["verdict"].startswith("late by ")
    assert body["work_classes"]["notifications"]["oldest_age_seconds"] > PROMISE_S
    assert f'club_queue_length{{queue="notifications"}} {queued}' in metrics
    assert f'club_consumer_lag{{consumer="notifications"}} {queued}' in metrics
    assert "club_relay_lag_events 0.0" in metrics
    assert "club_outbox_oldest_unpublished_age_seconds 0.0" in metrics
    assert 'club_projection_position{projection="rosters"} 0.0' in metrics
    eta = next(
        line
        for line in metrics.splitlines()
        if line.startswith('club_delivery_eta_seconds{queue="notifications"}')
    )
    assert float(eta.split()[-1]) > PROMISE_S
    age = next(
        line
        for line in metrics.splitlines()
        if line.startswith('club_queue_oldest_age_seconds{queue="notifications"}')
    )
    assert float(age.split()[-1]) > PROMISE_S


def club(migrated, *args: str) -> subprocess.CompletedProcess[str]:
    database_url, nats_url = migrated
    env = {
        **os.environ,
        "CLUB_DATABASE_URL": database_url,
        "CLUB_NATS_URL": nats_url,
        "CLUB_PROMISE_SECONDS": str(PROMISE_S),
        "COLUMNS": "160",
    }
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_club_status_prints_the_backlog_and_the_late_verdict(migrated):
    shown = club(migrated, "status")
    assert shown.returncode == 0, shown.stderr
    assert "Confirmation e-mail: late by" in shown.stdout
    assert "outbox (stored, unpublished)" in shown.stdout
    assert "work class notifications" in shown.stdout
    # No worker beats: said as a fact, not asked (its heartbeat is read).
    assert "no notifications worker has beaten in the last 15 s: none is running" in (
        " ".join(shown.stdout.split())
    )
    assert "Roles alive" in shown.stdout
    assert "at the assumed rate" in shown.stdout
    as_document = club(migrated, "status", "--json")
    assert as_document.returncode == 0, as_document.stderr
    document = json.loads(as_document.stdout)
    assert document["delivery"]["verdict"].startswith("late by ")
    assert document["delivery"]["promise_seconds"] == PROMISE_S
    assert [r for r in document["roles"] if r["kind"] == "worker"] == []


def test_club_status_refuses_a_bad_refresh_interval(migrated):
    refused = club(migrated, "status", "--watch", "often")
    assert refused.returncode == 2
    assert "is not a number of seconds" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_club_status_names_the_server_that_does_not_answer(migrated):
    database_url, nats_url = migrated
    no_nats = club((database_url, "nats://club:pw@127.0.0.1:1"), "status", "--json")
    assert no_nats.returncode == 1
    assert no_nats.stdout == ""  # the reconnect warnings go to stderr, not the JSON
    assert "NATS at nats://club:***@127.0.0.1:1 did not answer" in no_nats.stderr
    assert "CLUB_NATS_URL" in no_nats.stderr
    no_database = club(("postgresql://club:pw@127.0.0.1:1/club", nats_url), "status")
    assert no_database.returncode == 1
    assert "the database did not answer" in no_database.stderr
    assert "CLUB_DATABASE_URL" in no_database.stderr
    for answer in (no_nats, no_database):
        assert "Traceback" not in answer.stderr
        assert "pw@" not in answer.stderr + answer.stdout


def test_after_a_worker_drains_the_backlog_it_is_on_time(
    migrated, container, email_provider
):
    _, nats_url = migrated
    provider = email_provider

    async def body(js, nc) -> None:
        job = work_classes.notification_job(container, provider, FAST)
        async with working(worker_for(container, js, job)):
            for _ in range(600):
                info = await js.consumer_info("CLUB_EVENTS", work_classes.NOTIFICATIONS)
                done = await asyncio.to_thread(sent, container)
                if (
                    done == ENROLLED
                    and not info.num_pending
                    and not info.num_ack_pending
                ):
                    return
                await asyncio.sleep(0.1)
            raise AssertionError(f"not drained: {done} sent")

    asyncio.run(with_js(nats_url, body))
    status = chain(container, nats_url)

    delivery = status.delivery
    assert delivery.backlog == 0
    assert delivery.oldest_age_seconds == 0
    assert delivery.service_measured  # six sent within the last minute
    assert delivery.service_per_s == pytest.approx(ENROLLED / 60)
    assert delivery.verdict == "on time"
    assert not delivery.stalled
    states = {s.state: s.count for s in status.notification_states}
    assert states == {"sent": ENROLLED}
    assert status.stores["notifications"] == ENROLLED


def test_an_undecodable_stored_event_does_not_stop_the_status(migrated, container):
    """The relay dead-letters such an event; the status counts it and still
    answers, with the age of the first event it can read."""
    _, nats_url = migrated
    garbled = StoredEvent(
        originator_id=uuid4(),
        originator_version=1,
        topic="domain.enrollment:Enrollment.Confirmed",
        state=b"\x00 not what this version can decode",
    )
    container.app.recorder.insert_events([garbled])
    lesson_with_enrollments(container, 1)

    status = chain(container, nats_url)

    assert status.outbox.unpublished == 1 + 1 + 2  # it, the lesson, seat + enrollment
    assert status.outbox.oldest_age_seconds is not None
    assert status.rates.enrollment_events >= 1


def test_club_status_watch_refreshes_until_stopped(migrated):
    database_url, nats_url = migrated
    env = {**os.environ, "CLUB_DATABASE_URL": database_url, "CLUB_NATS_URL": nats_url}
    watching = subprocess.Popen(
        [sys.executable, "-m", "entrypoints.cli", "status", "--json", "--watch", "0.3"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # As a terminal's foreground job: a suite started in the background
        # (`make test &`) hands its children SIGINT ignored, and Ctrl-C then is not.
        preexec_fn=_interruptible,  # noqa: PLW1509 - only resets one signal
    )  # fmt: skip
    try:
        assert watching.stdout is not None
        first = json.loads(watching.stdout.readline())
        second = json.loads(watching.stdout.readline())
    finally:
        watching.send_signal(signal.SIGINT)  # Ctrl-C: stops quietly
        _, err = watching.communicate(timeout=30)
    assert second["at"] > first["at"]
    assert watching.returncode == 0
    assert "Traceback" not in err


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
