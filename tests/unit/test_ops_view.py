"""What the `/ops/` page says, from the `/ops/status` document: the verdict in plain
words, the hops in order, the DLQ by consumer and reason, everything escaped."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime, timedelta
from typing import Any

from adapters.nats.dlq import DeadLetter
from entrypoints.ops import view as ops_view
from entrypoints.ops.html import StatusView, sparkline, status_page
from entrypoints.ops.view import dlq_groups, hop_ages, hop_rows, role_rows, verdict

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def delivery(**changes: Any) -> dict[str, Any]:
    return {
        "verdict": "on time",
        "eta_seconds": 3.0,
        "promise_seconds": 10.0,
        "arrival_per_s": 2.0,
        "service_per_s": 100.0,
        "backlog": 4,
        "oldest_age_seconds": 1.5,
        "service_measured": True,
        "drain_seconds": 0.04,
        "rate_window_seconds": 60.0,
        "stalled": False,
    } | changes


def shown(dlq: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "outbox": {"position": 9, "unpublished": 2, "oldest_age_seconds": 0.5},
        "consumers": [
            {
                "consumer": "notifications",
                "kind": "work class",
                "exists": True,
                "num_pending": 3,
                "num_ack_pending": 1,
                "redelivered": 0,
                "lag_events": 4,
                "lag_seconds": 12.0,
                "position": None,
            }
        ],
        "saga_deadlines": None,
        "dlq": dlq or [],
        "delivery": delivery(),
    }


def letter(seq: int, reason: str, age_s: float, owner: str = "team-mail") -> DeadLetter:
    return DeadLetter(
        dlq_seq=seq,
        consumer="notifications",
        original_subject="club.events.Enrollment.EnrollmentConfirmed",
        original_seq=seq,
        event_id=f"e{seq}",
        reason=reason,
        owner=owner,
        deliveries=1,
        first_failed_at=None,
        last_failed_at=NOW - timedelta(seconds=age_s),
        data=b"",
        headers={},
    )


def test_the_module_s_examples_hold() -> None:
    failed, attempted = doctest.testmod(ops_view)
    assert attempted > 0
    assert failed == 0


def test_the_verdict_in_plain_words() -> None:
    on_time = verdict(delivery(), [])
    assert on_time.on_time
    assert on_time.headline == (
        "On time: a student enrolling now gets the e-mail in about 3.0 s (promise 10 s)"
    )
    late = verdict(delivery(verdict="late by 42 s", eta_seconds=52.0), [])
    assert not late.on_time
    assert late.headline.startswith("Late by 42 s: a student enrolling now gets")
    assert "about 52 s (promise 10 s)" in late.headline
    never = verdict(
        delivery(
            verdict="never drains",
            arrival_per_s=120.0,
            service_per_s=100.0,
            drain_seconds=None,
        ),
        [],
    )
    assert never.headline.startswith("Never drains: arrivals 120/s ≥ service 100/s")
    assert never.details[-1].endswith("the queue drains never.")


WORKER_BEAT = {
    "kind": "worker",
    "name": "notifications",
    "instance": "h:7:ab12",
    "last_beat_s_ago": 2.5,
}


def test_a_stalled_queue_says_whether_a_worker_beats() -> None:
    stalled = verdict(delivery(stalled=True, service_measured=False), [])
    assert "assumed: none finished" in stalled.details[1]
    assert stalled.details[-1] == (
        "Nothing finished while work waits: no notifications worker has beaten in "
        "the last 15 s: none is running (`club worker notifications`)."
    )
    beating = verdict(delivery(stalled=True, service_measured=False), [WORKER_BEAT])
    assert beating.details[-1].startswith(
        "Nothing finished while work waits, yet 1 notifications worker beat: stuck"
    )
    assert not any("beat" in d for d in verdict(delivery(), []).details)


def test_every_role_is_listed_and_one_without_a_beat_says_so() -> None:
    rows = role_rows(shown() | {"roles": [WORKER_BEAT]})
    by_role = {row.role: row for row in rows}
    assert {"api", "relay", "projector statistics", "worker notifications"} <= set(
        by_role
    )
    assert not any(row.role.startswith("sandbox") for row in rows)
    worker = by_role["worker notifications"]
    assert (worker.instance, worker.last_beat_seconds) == ("h:7:ab12", 2.5)
    assert (by_role["relay"].instance, by_role["relay"].last_beat_seconds) == (
        "",
        None,
    )
    page = status_page(
        StatusView(
            at=NOW,
            verdict=verdict(delivery(), []),
            rows=hop_rows(shown()),
            roles=rows,
            charts={},
            dlq=[],
            csrf="c",
        )
    )
    assert "<section id='roles'><h2>Roles alive</h2>" in page
    assert "<tr data-role='relay' class='waiting'>" in page
    assert "<td class='beat'>2.5 s ago</td>" in page


def test_the_hops_in_order_with_their_ages() -> None:
    rows = hop_rows(shown())
    assert [r.key for r in rows] == ["outbox", "notifications", "dlq"]
    assert rows[1].count == 4
    assert rows[1].lag == "4 events, 12 s"
    assert rows[2].detail == "empty"
    assert hop_ages(rows) == {"outbox": 0.5, "notifications": 12.0, "dlq": None}


def test_the_dlq_by_consumer_and_reason() -> None:
    status = shown(
        [{"consumer": "notifications", "messages": 3, "oldest_age_seconds": 30.0}]
    )
    entries = [
        letter(1, "permanent: 400", 30),
        letter(2, "permanent: 400", 10, owner="team-b"),
        letter(3, "contract: unknown field", 5),
    ]
    [group] = dlq_groups(status, entries, NOW)
    assert (group.consumer, group.messages, group.reasons_read) == (
        "notifications",
        3,
        3,
    )
    first, second = group.reasons
    assert (first.reason, first.count, first.owners) == (
        "permanent: 400",
        2,
        ["team-b", "team-mail"],
    )
    assert first.oldest_seconds == 30
    assert (second.reason, second.count) == ("contract: unknown field", 1)


def test_what_comes_from_outside_is_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    status = shown(
        [{"consumer": "notifications", "messages": 1, "oldest_age_seconds": 1.0}]
    )
    page = status_page(
        StatusView(
            at=NOW,
            verdict=verdict(delivery(), []),
            rows=hop_rows(status),
            charts={},
            dlq=dlq_groups(status, [letter(1, hostile, 1)], NOW),
            csrf="c'sr\"f",
        )
    )
    assert hostile not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "value='c&#x27;sr&quot;f'" in page


def test_the_chart_spans_the_hour_with_now_at_the_right() -> None:
    svg = sparkline([(3600.0, 0.0), (0.0, 20.0)])
    assert "points='0.0,33.0 177.0,3.0'" in svg
    assert "peak 20 s, now 20 s" in svg
    assert "no samples yet" in sparkline([])
