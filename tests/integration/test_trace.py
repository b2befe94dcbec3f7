"""`club trace` and /ops/trace on a real stack: api, relay, both projectors and a
notifications worker as processes, an e-mail sandbox whose answers the tests turn.

An enrollment whose e-mail is stuck (the provider answers 503) is traced stored,
published, applied by both projections, its notification row failing — and the
notifications worker pool is named as the owner, with the stream sequence and the
row where that obligation is recorded. A dead-lettered e-mail names the DLQ's
owner and entry; a sent one says done.

The tests share the module's stack and run in file order (the sandbox's knobs
carry over from one to the next)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import uuid4

import httpx
import pytest
import sqlalchemy as sa

from adapters.nats.trace_messages import Found, find_message
from adapters.postgres.tables import inbox, notifications
from application.next_steps import OWED_STATES
from tests.api_client import ClubClient, bearer
from tests.integration.helpers import with_js
from tests.stack import (
    CORE,
    FAST_FAULTS,
    Stack,
    eventually,
    running_stack,
    scratch_for,
)

TOKEN = "trace-test-operator-token-0123456789"  # noqa: S105 - a test value
DLQ_OWNER = "team-enrolment-mail"
WORKER = "the notifications worker pool (durable `notifications` on CLUB_EVENTS)"


@pytest.fixture(scope="module")
def stack(migrated, email_sandbox, request) -> Iterator[Stack]:
    env = FAST_FAULTS | {
        "CLUB_EMAIL_PROVIDER_URL": email_sandbox.url,
        "CLUB_OPERATOR_TOKEN": TOKEN,
        "CLUB_DLQ_OWNERS": f"notifications={DLQ_OWNER}",
    }
    roles = (*CORE, "worker")  # api, relay, both projectors, and the e-mails
    with running_stack(migrated, scratch_for(request, "logs"), roles, **env) as stack:
        yield stack


def club(migrated, *args: str) -> subprocess.CompletedProcess[str]:
    database_url, nats_url = migrated
    env = {
        **os.environ,
        "CLUB_DATABASE_URL": database_url,
        "CLUB_NATS_URL": nats_url,
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def traced(migrated, trace_id: str) -> dict[str, Any]:
    shown = club(migrated, "trace", trace_id, "--json")
    assert shown.returncode == 0, shown.stderr
    document: dict[str, Any] = json.loads(shown.stdout)
    return document


def enroll(stack: Stack) -> str:
    with ClubClient(stack.base, patient=True) as api:
        answer = api.enroll(api.lesson(), api.student())
    assert answer.status_code == 201, answer.text
    return str(answer.json()["enrollment_id"])


def email_row(container, enrollment_id: str) -> Any:
    with container.engine.connect() as conn:
        return conn.execute(
            sa.select(notifications).where(
                notifications.c.enrollment_id == enrollment_id
            )
        ).one_or_none()


def applied_by(container, event_id: str) -> set[str]:
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(inbox.c.consumer).where(inbox.c.event_id == event_id)
        ).scalars()
        return set(rows)


def hop(event: dict[str, Any], name: str) -> dict[str, Any]:
    return next(h for h in event["hops"] if h["hop"] == name)


def test_a_stuck_email_names_the_notifications_worker_and_where_it_is_recorded(
    migrated, container, stack, email_sandbox
) -> None:
    # Every send refused, for now.
    email_sandbox.set_knobs(fail_rate=1.0, fail_status=503)
    enrollment_id = enroll(stack)
    eventually(
        lambda: (row := email_row(container, enrollment_id)) and row.attempts >= 1,
        timeout=30,
    )
    event_id = str(email_row(container, enrollment_id).event_id)
    eventually(lambda: applied_by(container, event_id) >= {"rosters", "statistics"})

    document = traced(migrated, enrollment_id)

    assert document["kind"] == "enrollment"
    [event] = document["events"]
    assert event["type"] == "Enrollment.Confirmed"
    assert event["event_id"] == event_id
    assert event["stored_at"] is not None
    assert event["published"] is True
    seq = event["stream_seq"]
    assert isinstance(seq, int)
    assert seq > 0
    assert hop(event, "event store")["recorded_in"] == (
        f"notification id {event['notification_id']}"
    )
    assert hop(event, "relay")["state"] == "published"
    stream = hop(event, "stream")
    assert stream["state"] == f"CLUB_EVENTS seq {seq}"
    assert stream["recorded_in"].endswith("(found by inbox)")  # and still there
    assert stream["at"] >= event["stored_at"]
    for projection in ("rosters", "statistics"):
        applied = hop(event, f"projection {projection}")
        assert applied["state"] == "applied"
        assert applied["at"] is not None
    [row] = document["notifications"]
    assert row["state"] in OWED_STATES  # refused for now: failed, or sending again
    assert row["attempts"] >= 1
    provider = hop(event, "provider")
    assert provider["state"].startswith(f"confirmation e-mail {row['state']}")
    assert document["done"] is False
    [step] = document["next_steps"]
    assert step["owner"] == WORKER
    assert step["recorded_in"].startswith(
        f"the message at CLUB_EVENTS seq {seq}, not yet acked by durable "
        "`notifications`"
    )
    assert f"notification row state={row['state']}" in step["recorded_in"]

    rich = club(migrated, "trace", enrollment_id)
    assert rich.returncode == 0, rich.stderr
    assert f"enrollment {enrollment_id}" in rich.stdout
    assert "Next step" in rich.stdout
    assert "notifications worker pool" in rich.stdout
    assert f"CLUB_EVENTS seq {seq}" in rich.stdout


def test_ops_trace_serves_the_same_document_behind_the_operator_token(
    migrated, stack
) -> None:
    enrollment_id = enroll(stack)
    url = f"{stack.base}/ops/trace/{enrollment_id}"
    refused = httpx.get(url, timeout=10)
    shown = httpx.get(url, headers=bearer(TOKEN), timeout=30)
    traces = f"{stack.base}/ops/trace"
    unknown = httpx.get(f"{traces}/{uuid4()}", headers=bearer(TOKEN), timeout=30)
    malformed = httpx.get(f"{traces}/not-an-id", headers=bearer(TOKEN), timeout=30)

    assert refused.status_code == 401
    assert shown.status_code == 200, shown.text
    body = shown.json()
    from_cli = traced(migrated, enrollment_id)
    assert body["id"] == from_cli["id"] == enrollment_id
    assert set(body) == set(from_cli)
    assert [e["event_id"] for e in body["events"]] == [
        e["event_id"] for e in from_cli["events"]
    ]
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    assert malformed.status_code == 422


def test_a_dead_lettered_email_names_the_dlq_owner_and_its_entry(
    migrated, container, stack, email_sandbox
) -> None:
    email_sandbox.set_knobs(fail_rate=1.0, fail_status=400)  # refused for good
    enrollment_id = enroll(stack)
    eventually(
        lambda: (
            (row := email_row(container, enrollment_id))
            and row.state == "dead-lettered"
        ),
        timeout=30,
    )

    def lettered() -> dict[str, Any] | None:
        # The DLQ entry follows the row, and the projectors apply the event in
        # their own time: until they have, each is owed a step of its own.
        document = traced(migrated, enrollment_id)
        settled = document["dead_letters"] and len(document["next_steps"]) == 1
        return document if settled else None

    document = eventually(lettered, timeout=30, interval=0.5)

    [letter] = document["dead_letters"]
    assert letter["consumer"] == "notifications"
    assert letter["owner"] == DLQ_OWNER
    [event] = document["events"]
    assert letter["event_id"] == event["event_id"]
    assert hop(event, "DLQ notifications")["recorded_in"] == (
        f"CLUB_DLQ seq {letter['dlq_seq']}"
    )
    [step] = document["next_steps"]
    assert step["owner"] == f"the DLQ owner {DLQ_OWNER}"
    assert "`club dlq replay --consumer notifications`" in step["action"]
    assert step["recorded_in"] == (
        f"CLUB_DLQ seq {letter['dlq_seq']} (consumer notifications)"
    )


def test_a_sent_email_says_done(migrated, container, stack, email_sandbox) -> None:
    email_sandbox.set_knobs(fail_rate=0.0, fail_status=503)
    enrollment_id = enroll(stack)
    eventually(
        lambda: (row := email_row(container, enrollment_id)) and row.state == "sent",
        timeout=30,
    )

    def finished() -> dict[str, Any] | None:
        # The ack follows the committed `sent`; projections may trail the e-mail.
        document = traced(migrated, enrollment_id)
        return document if document["done"] else None

    document = eventually(finished, timeout=30, interval=0.5)

    assert document["next_steps"] == []
    [event] = document["events"]
    # Earlier e-mails still retrying hold the durable's ack floor back: above it
    # JetStream does not say whether this message was acked, so the trace does
    # not claim it; the sent row is what closes the e-mail's obligation.
    assert hop(event, "work class notifications")["state"].startswith(
        ("acked", "delivered (above the ack floor")
    )
    provider = hop(event, "provider")
    assert provider["state"].startswith("confirmation e-mail sent, attempts 1")
    assert provider["at"] is not None
    rich = club(migrated, "trace", enrollment_id)
    assert "Next step: nothing: done." in rich.stdout


def test_an_export_waiting_for_its_worker_names_the_exports_pool(
    migrated, stack
) -> None:
    """No exports worker runs in this stack: the request waits in its durable."""
    with ClubClient(stack.base, patient=True) as api:
        lesson_id = api.lesson()
        answer = api.request(
            "POST",
            f"/lessons/{lesson_id}/roster-exports",
            headers={"Idempotency-Key": str(uuid4())},
        )
    assert answer.status_code == 202, answer.text
    operation_id = str(answer.json()["operation_id"])

    def waiting() -> dict[str, Any] | None:
        # Published, and past the projections the stack runs: only the exports
        # pool, which this stack lacks, may still owe a step.
        document = traced(migrated, operation_id)
        event = document["events"][0]
        projected = all(
            h["state"] in ("applied", "acked")
            for h in event["hops"]
            if h["hop"].startswith("projection ")
        )
        return document if event["stream_seq"] is not None and projected else None

    document = eventually(waiting, timeout=30, interval=0.5)

    assert document["kind"] == "export"
    assert document["export"]["status"] == "pending"
    [event] = document["events"]
    assert hop(event, "work class exports")["state"] == "waiting (not yet delivered)"
    [step] = document["next_steps"]
    assert step["owner"] == (
        "the exports worker pool (durable `exports` on CLUB_EVENTS)"
    )
    assert f"CLUB_EVENTS seq {event['stream_seq']}" in step["recorded_in"]
    assert "status=pending" in step["recorded_in"]


def test_a_purchase_without_a_saga_running_names_the_saga(migrated, stack) -> None:
    with ClubClient(stack.base, patient=True) as api:
        student_id = api.student()
        lesson = api.request(
            "POST",
            "/lessons",
            json={
                "title": "Intensive",
                "capacity": 3,
                "starts_at": "2027-01-10T10:00:00Z",
                "price_cents": 2500,
            },
        )
        assert lesson.status_code == 201, lesson.text
        answer = api.request(
            "POST",
            f"/lessons/{lesson.json()['lesson_id']}/purchases",
            json={"student_id": student_id},
            headers={"Idempotency-Key": uuid4().hex},
        )
    assert answer.status_code == 201, answer.text
    purchase_id = str(answer.json()["purchase_id"])

    document = traced(migrated, purchase_id)

    assert document["kind"] == "purchase"
    assert document["saga"]["status"] == "reserved"
    assert document["events"][0]["type"] == "Purchase.Reserved"
    saga_steps = [s for s in document["next_steps"] if "saga" in s["owner"]]
    [step] = saga_steps
    assert step["owner"] == "the saga (`club saga`)"
    assert f"purchase {purchase_id} status=reserved" in step["recorded_in"]
    assert "saga_deadlines row" in step["recorded_in"]


def test_an_unknown_id_exits_1_and_a_malformed_one_exits_2(migrated) -> None:
    unknown_id = str(uuid4())
    unknown = club(migrated, "trace", unknown_id)
    assert unknown.returncode == 1
    assert f"nothing is stored under {unknown_id}" in unknown.stderr
    malformed = club(migrated, "trace", "enrollment-42")
    assert malformed.returncode == 2
    assert "'enrollment-42' is not an id" in malformed.stderr
    assert "a UUID such as" in malformed.stderr
    for answer in (unknown, malformed):
        assert "Traceback" not in answer.stderr


def test_the_stream_search_finds_the_sequence_the_inbox_recorded(
    migrated, container, stack
) -> None:
    """Before any projection applied an event, the trace finds its message by
    searching the stream; here it must agree with what the inbox recorded."""
    enrollment_id = enroll(stack)
    document = eventually(
        lambda: (d := traced(migrated, enrollment_id))["events"][0]["stream_seq"] and d,
        timeout=30,
        interval=0.5,
    )
    [event] = document["events"]

    async def search(js, _nc) -> Found | None:
        return await find_message(
            js,
            event["event_id"],
            event["subject"],
            datetime.fromisoformat(event["stored_at"]),
        )

    found = asyncio.run(with_js(migrated[1], search))
    assert found is not None
    assert found.seq == event["stream_seq"]
    absent = asyncio.run(
        with_js(
            migrated[1],
            lambda js, _nc: find_message(
                js,
                str(uuid4()),
                event["subject"],
                datetime.fromisoformat(event["stored_at"]),
            ),
        )
    )
    assert absent is None
