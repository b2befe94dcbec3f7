"""A person's work by state: an item folded from its events (its state, since when,
why), the states a list takes, pages oldest first, and the lines `club status`
and /ops say."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from application.work_history import (
    EXPORT_SETS,
    PURCHASE_MAY_KEEP,
    PURCHASE_SETS,
    export_item,
    last_events_of,
    purchase_item,
)
from application.work_lists import (
    EXPORTS,
    NOTIFICATIONS,
    PURCHASES,
    REFUND_FAILED,
    WorkItem,
    check_limit,
    check_state,
    page_of,
    tallies_of,
)
from domain.export import Export
from domain.purchase import Purchase, Status
from entrypoints.ops.attention import attention_lines
from entrypoints.ops.work_lists import state_named

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
BASES = {"Event", "Created"}  # the library's, each aggregate's own subclass


def reserved() -> Purchase:
    return Purchase.reserve(
        purchase_id=uuid4(),
        lesson_id=uuid4(),
        student_id="ann",
        request_id="key-1",
        price_cents=2500,
        now=NOW,
        hold=timedelta(minutes=15),
    )


def captured() -> Purchase:
    p = reserved()
    p.request_payment(next_check_at=NOW + timedelta(seconds=30))
    p.record_captured(payment_id="pay-1", amount_cents=2500)
    return p


def test_a_purchase_in_review_is_listed_since_the_review_with_its_reason() -> None:
    p = reserved()
    p.request_payment(next_check_at=NOW)
    p.record_outcome_unknown(reason="timeout", next_check_at=NOW, owner="on-call")
    p.require_review(reason="checks ran out", owner="payments-team")
    p.require_review(reason="a later reason", owner="x")  # the first stands
    events = p.collect_events()

    item = purchase_item(events)

    assert item.id == p.id
    assert item.state == "manual_review"
    assert item.since == events[-1].timestamp  # the review, not the reservation
    assert item.reason == "checks ran out"
    assert item.detail["owner"] == "payments-team"
    assert item.detail["student_id"] == "ann"


def test_a_refund_whose_attempt_failed_is_told_apart_from_one_awaited() -> None:
    awaited = captured()
    awaited.request_refund(now=NOW)
    failed = captured()
    failed.request_refund(now=NOW)
    failed.schedule_refund_retry(
        reason="provider 503", next_attempt_at=NOW, due_at=failed.next_refund_at
    )
    failed_events = failed.collect_events()

    assert purchase_item(awaited.collect_events()).state == "refund_pending"
    item = purchase_item(failed_events)
    assert item.state == REFUND_FAILED
    assert item.reason == "provider 503"
    assert item.since == failed_events[-1].timestamp


def test_a_payment_being_checked_names_who_checks() -> None:
    p = reserved()
    p.request_payment(next_check_at=NOW)
    p.record_outcome_unknown(reason="timeout", next_check_at=NOW, owner="on-call")
    p.schedule_check(reason="still unknown", next_check_at=NOW, due_at=p.next_check_at)
    events = p.collect_events()

    item = purchase_item(events)

    assert item.state == "payment_checking"
    assert item.since == events[2].timestamp  # when it became unknown
    assert item.reason == "still unknown"
    assert item.detail["owner"] == "on-call"


def test_an_export_is_listed_since_its_last_start_and_a_failure_has_its_reason() -> (
    None
):
    e = Export.request(
        export_id=uuid4(), lesson_id=uuid4(), lesson_version=1, requested_at=NOW
    )
    e.start(now=NOW)
    e.start(now=NOW)  # a redelivery after a worker died started it afresh
    running = e.collect_events()
    assert export_item(running).state == "running"
    assert export_item(running).since == running[-1].timestamp
    assert export_item(running[:1]).state == "pending"
    e.fail(reason="the file could not be written: disk full", now=NOW)
    failed = export_item([*running, *e.collect_events()])
    assert failed.state == "failed"
    assert failed.reason == "the file could not be written: disk full"
    assert failed.detail["attempts"] == "2"


def test_every_purchase_and_export_event_is_known_to_the_lists() -> None:
    """A new event class must say whether it sets a status, or the lists could
    miss a purchase whose history ends with it."""
    purchase_events = {
        cls
        for name, cls in inspect.getmembers(Purchase, inspect.isclass)
        if issubclass(cls, Purchase.Event) and name not in BASES
    }
    assert purchase_events == set(PURCHASE_SETS) | set(PURCHASE_MAY_KEEP)
    export_events = {
        cls
        for name, cls in inspect.getmembers(Export, inspect.isclass)
        if issubclass(cls, Export.Event) and name not in BASES
    }
    assert export_events == set(EXPORT_SETS)


def test_a_state_is_found_by_the_events_that_can_end_its_history() -> None:
    review = last_events_of(PURCHASES, ["manual_review"])
    assert Purchase.ManualReviewRequired in review
    assert Purchase.PaymentDeclined in review  # may leave a review as it was
    assert Purchase.AccessGranted not in review  # always confirms
    assert Purchase.RefundRequested in last_events_of(PURCHASES, [REFUND_FAILED])
    assert last_events_of(EXPORTS, ["failed"]) == (Export.Failed,)


def test_a_bad_state_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="not a state of purchases") as refused:
        check_state(PURCHASES, "stuck")
    assert "manual_review" in str(refused.value)
    assert "refund_failed" in str(refused.value)
    with pytest.raises(ValueError, match="dead-lettered"):
        state_named(NOTIFICATIONS, "lost")
    with pytest.raises(ValueError, match="--limit"):
        check_limit(0)


def test_a_state_may_be_spelt_with_dashes_or_underscores() -> None:
    assert state_named(PURCHASES, "manual-review") == "manual_review"
    assert state_named(NOTIFICATIONS, "dead_lettered") == "dead-lettered"
    assert state_named(EXPORTS, "failed") == "failed"


def item(state: str, minutes_ago: int) -> WorkItem:
    return WorkItem(id=uuid4(), state=state, since=NOW - timedelta(minutes=minutes_ago))


def test_a_page_is_the_state_oldest_first() -> None:
    items = [
        item("manual_review", 5),
        item("refund_pending", 90),
        item("manual_review", 60),
        item("manual_review", 30),
    ]

    first = page_of(PURCHASES, "manual_review", items, limit=2, offset=0)
    second = page_of(PURCHASES, "manual_review", items, limit=2, offset=2)

    assert first.total == second.total == 3
    assert [i.age_seconds(NOW) for i in first.items] == [3600.0, 1800.0]
    assert [i.age_seconds(NOW) for i in second.items] == [300.0]


def test_tallies_count_each_watched_state_with_its_oldest() -> None:
    items = [item("manual_review", 5), item("manual_review", 180), item("confirmed", 1)]

    tallies = {t.state: t for t in tallies_of(PURCHASES, items)}

    assert tallies["manual_review"].count == 2
    assert tallies["manual_review"].oldest_age_seconds(NOW) == 3 * 3600
    assert tallies["refund_failed"].count == 0
    assert tallies["refund_failed"].oldest_age_seconds(NOW) is None
    assert "confirmed" not in tallies  # settled: nobody's work


def test_status_says_each_waiting_state_and_each_expiring_dead_letter() -> None:
    shown = {
        "work": [
            {"kind": "purchases", "state": "manual_review", "said": "in manual review",
             "count": 3, "oldest_age_seconds": 3 * 3600.0},
            {"kind": "purchases", "state": "refund_failed", "said": "x",
             "count": 0, "oldest_age_seconds": None},
            {"kind": "notifications", "state": "unknown",
             "said": "whose outcome is unknown", "count": 1,
             "oldest_age_seconds": 42.0},
        ],
        "dlq": [
            {"consumer": "notifications", "messages": 5, "expiring": 2},
            {"consumer": "rosters", "messages": 1, "expiring": 0},
        ],
    }  # fmt: skip

    lines = attention_lines(shown)

    assert lines == [
        "3 purchases in manual review (oldest 3.0 h): "
        "`club purchases list --status manual_review`",
        "1 notification whose outcome is unknown (oldest 42 s): "
        "`club notifications list --state unknown`",
        "2 dead letters of notifications expire within 24.0 h (CLUB_DLQ_RETENTION): "
        "the DLQ drops them unseen; replay or discard them "
        "(`club dlq list --consumer notifications`)",
    ]
    assert attention_lines({"work": [], "dlq": []}) == []
    assert Status.MANUAL_REVIEW == "manual_review"
