"""A person's work by state on real PostgreSQL and NATS: purchases, notifications
and exports put in each state by the use cases (and the notification store the
worker writes through), then listed oldest first with their reason — by the
adapter, `club purchases|notifications|exports list`, /ops/status, /metrics,
`club status` and the /ops page; and the DLQ's audit trail on the page.

The tests share the module's servers and run in file order: the first one makes
the work the next ones show."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic
from fastapi.testclient import TestClient

from adapters.nats.streams import DLQ_STREAM
from adapters.postgres.work_lists import PostgresWorkLists
from application.commands import RequestExport, ScheduleLesson
from application.console_reads import DiscardRequest, DlqFilter, ReplayRequest
from application.notification_decision import State
from application.notification_kind import Kind
from application.notification_record import NotificationRequest
from application.notifications import RetryPolicy
from domain.purchase import Purchase
from domain.student import StudentProfile
from entrypoints.ops.access import OpsConfig
from entrypoints.runtime.api import create_app
from entrypoints.runtime.bootstrap import dead_letter_queue
from entrypoints.runtime.exports_wiring import export_runner
from tests.identity import VERIFIER
from tests.integration.helpers import run, scrape, with_js
from tests.integration.test_dlq_pick_and_discard import CONFIRMED, REFUSED, write

TOKEN = "work-lists-test-operator-token"  # noqa: S105 - a test value
OPS = OpsConfig(operator_token=TOKEN, promise_seconds=10, email_rate_per_s=100)
BEARER = {"Authorization": f"Bearer {TOKEN}"}
NOW = datetime.now(UTC)
IDS: dict[str, UUID] = {}  # what the first test made, by name


class FullDisk:
    def write(self, *_: object) -> str:
        raise OSError(28, "No space left on device")


def purchase(container, lesson_id: UUID, name: str) -> UUID:
    """A new student's purchase, its payment asked for (one seat a student)."""
    app, student_id = container.app, f"work-{name}"
    container.students.save(
        StudentProfile.create(student_id=student_id, email="a@example.org", name="A")
    )
    view = app.reserve_purchase(
        lesson_id=lesson_id,
        student_id=student_id,
        request_id=uuid4().hex,
        now=datetime.now(UTC),
        hold_seconds=600,
    )
    app.request_payment(view.purchase_id, next_check_at=datetime.now(UTC))
    return view.purchase_id


def unknown(app, purchase_id: UUID, reason: str = "the provider timed out") -> None:
    app.record_payment_unknown(
        purchase_id, reason=reason, next_check_at=datetime.now(UTC), owner="on-call"
    )


def captured(app, purchase_id: UUID) -> None:
    app.record_payment_captured(
        purchase_id, payment_id=f"pay-{purchase_id.hex[:8]}", amount_cents=2500
    )


def notification(container, state: State, error: str) -> UUID:
    event_id = uuid4()
    request = NotificationRequest(
        event_id=event_id,
        kind=Kind.CONFIRMATION,
        enrollment_id=uuid4(),
        lesson_id=uuid4(),
        student_id="work-ann",
    )
    container.notifications.open_sending(request)
    container.notifications.mark(event_id, state, attempts=3, error=error)
    return event_id


def export(container, lesson_id: UUID) -> UUID:
    export_id = uuid4()
    container.app.request_export(
        RequestExport(export_id=export_id, lesson_id=lesson_id, requested_at=NOW)
    )
    return export_id


@pytest.fixture(scope="module", autouse=True)
def work(container, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Purchases, notifications and exports in each state, by the use cases."""
    tmp_path = tmp_path_factory.mktemp("exports")
    app = container.app
    lesson_id = uuid4()
    app.schedule_lesson(
        ScheduleLesson(
            lesson_id=lesson_id,
            title="Intensive",
            capacity=20,
            starts_at=datetime(2027, 1, 10, tzinfo=UTC),
            price_cents=2500,
        )
    )
    for name in ("review_first", "review_second"):
        IDS[name] = purchase(container, lesson_id, name)
        unknown(app, IDS[name])
        app.require_review(IDS[name], reason=f"{name}: checks ran out", owner="pay")
    IDS["checking"] = purchase(container, lesson_id, "checking")
    unknown(app, IDS["checking"], "a timeout after 10 s")
    IDS["refund_failed"] = purchase(container, lesson_id, "refund_failed")
    captured(app, IDS["refund_failed"])
    app.request_refund(IDS["refund_failed"], now=datetime.now(UTC))
    app.schedule_refund_retry(
        IDS["refund_failed"], reason="refund: provider answered 503",
        next_attempt_at=datetime.now(UTC),
        due_at=app.repository.get(IDS["refund_failed"]).next_refund_at,
    )  # fmt: skip
    IDS["refund_pending"] = purchase(container, lesson_id, "refund_pending")
    captured(app, IDS["refund_pending"])
    app.request_refund(IDS["refund_pending"], now=datetime.now(UTC))
    IDS["confirmed"] = purchase(container, lesson_id, "confirmed")
    captured(app, IDS["confirmed"])
    app.grant_access(IDS["confirmed"])
    IDS["unknown"] = notification(container, State.UNKNOWN, "lookup failed: 503")
    IDS["failed"] = notification(container, State.FAILED, "provider answered 400")
    IDS["sent"] = notification(container, State.SENT, "")
    IDS["export_pending"] = export(container, lesson_id)
    IDS["export_failed"] = export(container, lesson_id)
    fails = export_runner(
        container, tmp_path, files=FullDisk(), policy=RetryPolicy(max_attempts=1)
    )
    fails.handle(IDS["export_failed"])
    IDS["export_running"] = export(container, lesson_id)
    stuck = app.get_export(IDS["export_running"])
    stuck.start(now=datetime.now(UTC))  # its worker died here
    app.save(stuck)


def lists_of(container) -> PostgresWorkLists:
    app = container.app
    return PostgresWorkLists(container.engine, app.recorder, app.mapper)


def test_purchases_are_listed_by_state_oldest_first_with_the_reason(
    container,
) -> None:
    lists = lists_of(container)
    review = lists.page("purchases", "manual_review", limit=10)
    assert [i.id for i in review.items] == [IDS["review_first"], IDS["review_second"]]
    assert review.items[0].reason == "review_first: checks ran out"
    assert review.items[0].detail["owner"] == "pay"
    assert review.items[0].since < review.items[1].since
    paged = lists.page("purchases", "manual_review", limit=1, offset=1)
    assert (paged.total, [i.id for i in paged.items]) == (2, [IDS["review_second"]])
    failed = lists.page("purchases", "refund_failed", limit=10).items
    assert [(i.id, i.reason) for i in failed] == [
        (IDS["refund_failed"], "refund: provider answered 503")
    ]
    pending = lists.page("purchases", "refund_pending", limit=10).items
    assert [i.id for i in pending] == [IDS["refund_pending"]]
    checking = lists.page("purchases", "payment_checking", limit=10).items
    assert [(i.id, i.reason) for i in checking] == [
        (IDS["checking"], "a timeout after 10 s")
    ]
    confirmed = lists.page("purchases", "confirmed", limit=10).items
    assert [i.id for i in confirmed] == [IDS["confirmed"]]
    with pytest.raises(ValueError, match="manual_review"):
        lists.page("purchases", "stuck", limit=10)


def test_notifications_and_exports_are_listed_by_state(container) -> None:
    lists = lists_of(container)
    unknown_mail = lists.page("notifications", "unknown", limit=10).items
    assert [(i.id, i.reason) for i in unknown_mail] == [
        (IDS["unknown"], "lookup failed: 503")
    ]
    assert lists.page("notifications", "failed", limit=10).total == 1
    exports = {
        s: [(i.id, i.reason) for i in lists.page("exports", s, limit=10).items]
        for s in ("pending", "running", "failed")
    }
    assert exports["pending"] == [(IDS["export_pending"], None)]
    assert exports["running"] == [(IDS["export_running"], None)]
    [(failed_id, reason)] = exports["failed"]
    assert failed_id == IDS["export_failed"]
    assert "No space left on device" in str(reason)


def test_a_finished_export_leaves_the_lists(container, tmp_path: Path) -> None:
    runner = export_runner(container, tmp_path)
    done = export(container, container.app.get_export(IDS["export_pending"]).lesson_id)
    runner.handle(done)
    lists = lists_of(container)
    assert [i.id for i in lists.page("exports", "succeeded", limit=10).items] == [done]
    pending = lists.page("exports", "pending", limit=10).items
    assert [i.id for i in pending] == [IDS["export_pending"]]


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


def test_the_cli_lists_each_state_and_refuses_a_bad_one(migrated) -> None:
    review = club(migrated, "purchases", "list", "--status", "manual-review", "--json")
    assert review.returncode == 0, review.stderr
    rows = [json.loads(line) for line in review.stdout.splitlines()]
    assert [r["id"] for r in rows] == [
        str(IDS["review_first"]),
        str(IDS["review_second"]),
    ]
    assert rows[0]["state"] == "manual_review"
    assert rows[0]["reason"] == "review_first: checks ran out"
    assert rows[0]["age_seconds"] >= rows[1]["age_seconds"] > 0
    table = club(migrated, "purchases", "list", "--status", "refund_failed")
    assert table.returncode == 0, table.stderr
    assert str(IDS["refund_failed"]) in table.stdout
    assert "refund: provider answered 503" in table.stdout
    limited = club(
        migrated, "notifications", "list", "--state", "unknown", "--limit", "1",
        "--json",
    )  # fmt: skip
    assert limited.returncode == 0, limited.stderr
    assert [json.loads(line)["id"] for line in limited.stdout.splitlines()] == [
        str(IDS["unknown"])
    ]
    exports = club(migrated, "exports", "list", "--status", "failed", "--json")
    assert exports.returncode == 0, exports.stderr
    assert json.loads(exports.stdout)["id"] == str(IDS["export_failed"])
    tallies = club(migrated, "purchases", "list")
    assert tallies.returncode == 0, tallies.stderr
    assert "2 purchases in manual review (oldest" in tallies.stdout
    bad = club(migrated, "purchases", "list", "--status", "stuck")
    assert bad.returncode == 2
    assert "'stuck' is not a state of purchases; valid:" in bad.stderr
    assert "manual_review" in bad.stderr
    assert "Traceback" not in bad.stderr
    too_many = club(migrated, "exports", "list", "--status", "failed", "--limit", "0")
    assert too_many.returncode == 2
    assert "--limit must be between 1 and 1000" in too_many.stderr


def test_status_metrics_and_the_page_show_the_work_waiting(migrated, container) -> None:
    _, nats_url = migrated
    app = create_app(container, nats_url, ops=OPS, verifier=VERIFIER)
    with TestClient(app) as api:
        shown = api.get("/ops/status", headers=BEARER).json()
        metrics = scrape(api)
        page = api.get("/ops/", headers=BEARER)
        listed = api.get(
            "/ops/work/purchases",
            params={"state": "manual_review", "limit": 1},
            headers=BEARER,
        )
        second = api.get(
            "/ops/work/purchases",
            params={"state": "manual_review", "limit": 1, "offset": 1},
            headers=BEARER,
        )
        bad = api.get("/ops/work/purchases?state=stuck", headers=BEARER)
        refused = api.get("/ops/work/purchases?state=manual_review")
    work = {(w["kind"], w["state"]): w for w in shown["work"]}
    assert work["purchases", "manual_review"]["count"] == 2
    assert work["purchases", "manual_review"]["oldest_age_seconds"] > 0
    assert work["purchases", "refund_failed"]["count"] == 1
    assert work["notifications", "unknown"]["count"] == 1
    assert work["exports", "failed"]["count"] == 1
    assert work["exports", "running"]["count"] == 1
    assert 'club_purchases{status="manual_review"} 2.0' in metrics
    assert 'club_purchases{status="refund_failed"} 1.0' in metrics
    assert 'club_notifications{state="unknown"} 1.0' in metrics
    assert 'club_exports{status="failed"} 1.0' in metrics
    assert "club_manual_reviews_waiting 2.0" in metrics
    oldest = next(
        line
        for line in metrics.splitlines()
        if line.startswith(
            'club_work_oldest_age_seconds{kind="purchases",state="manual_review"}'
        )
    )
    assert float(oldest.split()[-1]) > 0
    assert page.status_code == 200
    assert "<section id='work'>" in page.text
    assert "2 purchases in manual review (oldest" in page.text
    assert "/ops/work/purchases?state=manual_review" in page.text
    assert listed.status_code == 200
    assert str(IDS["review_first"]) in listed.text
    assert str(IDS["review_second"]) not in listed.text
    assert "rel='next'" in listed.text
    assert str(IDS["review_second"]) in second.text
    assert "rel='prev'" in second.text
    assert bad.status_code == 422
    assert "&#x27;stuck&#x27; is not a state of purchases" in bad.text
    assert refused.status_code == 401


def test_club_status_says_what_waits_on_a_person(migrated) -> None:
    shown = club(migrated, "status")
    assert shown.returncode == 0, shown.stderr
    said = " ".join(shown.stdout.split())
    assert "2 purchases in manual review (oldest" in said
    assert "`club purchases list --status manual_review`" in said
    assert "1 purchase whose refund failed (retrying)" in said
    assert "1 notification whose outcome is unknown" in said
    assert "1 export failed" in said


def test_the_page_shows_what_a_replay_held_back_and_what_was_discarded(
    migrated, container
) -> None:
    _, nats_url = migrated
    two_days_ago = datetime.now(UTC) - timedelta(days=2)
    old, fresh = run(
        with_js(
            nats_url,
            lambda js, _nc: write(
                js,
                "notifications",
                [(CONFIRMED, REFUSED, two_days_ago), (CONFIRMED, REFUSED, None)],
            ),
        )
    )

    async def replay_then_discard(js, _nc) -> None:
        queue = dead_letter_queue(js, container)
        await queue.replay(
            ReplayRequest(
                consumer="notifications",
                operator="ann-operator",
                reason="provider fixed",
                rate_per_s=100,
                only=DlqFilter(event_ids=frozenset({old})),
            )
        )
        await queue.discard(
            DiscardRequest(
                consumer="notifications",
                operator="ann-operator",
                reason="a test address, never delivered",
                only=DlqFilter(event_ids=frozenset({fresh})),
            )
        )

    app = create_app(container, nats_url, ops=OPS, verifier=VERIFIER)
    with TestClient(app) as api:
        before = api.get("/ops/", headers=BEARER).text
        run(with_js(nats_url, replay_then_discard))
        after = api.get("/ops/", headers=BEARER).text
    assert "<table id='past-key-lifetime'>" in before
    assert f"data-event='{old}'" in before
    assert f"data-event='{fresh}'" not in before  # first failed just now
    held = after.split("<table id='held-back'>")[1].split("</table>")[0]
    assert old in held
    assert "ann-operator" in held
    discarded = after.split("<table id='discards'>")[1].split("</table>")[0]
    assert fresh in discarded
    assert "a test address, never delivered" in discarded


def test_an_undecodable_purchase_event_leaves_the_lists_answering(
    container,
) -> None:
    """Its history is left out, as the relay and `club status` skip such an event;
    the others are still listed and counted."""
    garbled = StoredEvent(
        originator_id=uuid4(),
        originator_version=1,
        topic=get_topic(Purchase.ManualReviewRequired),
        state=b"\x00 not what this version can decode",
    )
    container.app.recorder.insert_events([garbled])
    lists = lists_of(container)

    review = lists.page("purchases", "manual_review", limit=10)
    tallies = {(t.kind, t.state): t.count for t in lists.tallies()}

    assert [i.id for i in review.items] == [IDS["review_first"], IDS["review_second"]]
    assert tallies["purchases", "manual_review"] == 2


async def dlq_max_age(js, max_age: float) -> float:
    """Set CLUB_DLQ's max_age; returns the one it had."""
    config = (await js.stream_info(DLQ_STREAM)).config
    await js.update_stream(dataclasses.replace(config, max_age=max_age))
    return float(config.max_age or 0)


def test_dead_letters_near_the_dlq_retention_are_said_in_status_and_on_the_page(
    migrated, container
) -> None:
    _, nats_url = migrated
    consumer = f"exp-{uuid4().hex[:8]}"
    letters = [(CONFIRMED, REFUSED, None)] * 2
    run(with_js(nats_url, lambda js, _nc: write(js, consumer, letters)))
    kept = run(with_js(nats_url, lambda js, _nc: dlq_max_age(js, 3_600)))
    try:
        shown = club(migrated, "status")
        app = create_app(container, nats_url, ops=OPS, verifier=VERIFIER)
        with TestClient(app) as api:
            page = api.get("/ops/", headers=BEARER).text
    finally:
        run(with_js(nats_url, lambda js, _nc: dlq_max_age(js, kept)))
    said = f"2 dead letters of {consumer} expire within 24.0 h (CLUB_DLQ_RETENTION)"
    assert shown.returncode == 0, shown.stderr
    assert said in " ".join(shown.stdout.split())
    assert said in page
