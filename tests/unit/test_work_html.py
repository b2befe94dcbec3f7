"""The /ops page's sections for a person's work and the DLQ's audit trail: what they
say, every value escaped, the list paged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from application.console_reads import DeadLetter
from application.dlq_audit import DiscardRecord, HeldBackRecord
from application.work_lists import WorkItem, WorkPage
from entrypoints.ops.dlq_trail import dlq_trail_section
from entrypoints.ops.work_html import work_list_page, work_section

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
DAY = 86_400.0


def letter(event_id: str, first_failed: datetime) -> DeadLetter:
    return DeadLetter(
        dlq_seq=1,
        consumer="notifications",
        original_subject="club.events.enrollment.EnrollmentConfirmed",
        original_seq=7,
        event_id=event_id,
        reason="permanent: <b>400</b>",
        owner="team-mail",
        deliveries=3,
        first_failed_at=first_failed,
        last_failed_at=first_failed,
        data=b"{}",
        headers={},
    )


def test_the_work_section_says_each_line_and_links_each_state() -> None:
    shown = {
        "work": [
            {"kind": "purchases", "state": "manual_review", "said": "in manual review",
             "count": 2, "oldest_age_seconds": 7200.0},
            {"kind": "exports", "state": "failed", "said": "failed", "count": 0,
             "oldest_age_seconds": None},
        ],
        "dlq": [{"consumer": "notifications", "messages": 4, "expiring": 4}],
    }  # fmt: skip

    html = work_section(shown)

    assert "2 purchases in manual review (oldest 2.0 h)" in html
    assert "4 dead letters of notifications expire within 24.0 h" in html
    assert "href='/ops/work/purchases?state=manual_review&amp;limit=50" in html
    assert "<tr data-work='purchases/manual_review' class='waiting'>" in html
    assert "<tr data-work='exports/failed'>" in html
    for kind in ("purchases", "notifications", "exports"):  # a section each
        assert f"<article class='work' id='work-{kind}'>" in html
    assert "state=succeeded" in html.split("id='work-exports'")[1]  # the others


def test_a_list_page_escapes_and_links_the_next_and_previous_pages() -> None:
    items = [
        WorkItem(
            id=uuid4(),
            state="manual_review",
            since=NOW - timedelta(hours=3),
            reason="<script>alert(1)</script>",
            detail={"owner": "pay"},
        )
    ]
    page = WorkPage(
        kind="purchases", state="manual_review", items=items, total=3, offset=1
    )

    html = work_list_page(page, now=NOW, csrf="", limit=1)

    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "2 to 2 of 3" in html
    assert "offset=0'>previous</a>" in html
    assert "offset=2'>next</a>" in html
    assert "3.0 h" in html
    assert f"<a href='/ops/trace/{items[0].id}'>" in html  # its journey
    assert f"<a href='/ops/purchases/{items[0].id}'>settle</a>" in html


def test_the_trail_shows_letters_past_the_key_lifetime_held_back_and_discarded() -> (
    None
):
    old, fresh = str(uuid4()), str(uuid4())
    entries = [letter(old, NOW - timedelta(days=2)), letter(fresh, NOW)]
    held = [
        HeldBackRecord(
            replay_id=uuid4(),
            operator="ann",
            consumer="notifications",
            held_back=1,
            event_ids=[old],
            started_at=NOW,
        )
    ]
    discards = [
        DiscardRecord(
            discard_id=uuid4(),
            operator="bob",
            reason="<i>test address</i>",
            consumer="notifications",
            dry_run=False,
            discarded=7,
            event_ids=[str(uuid4()) for _ in range(7)],
            outcome="finished",
            started_at=NOW,
        )
    ]

    html = dlq_trail_section(
        entries=entries, key_lifetime_s=DAY, now=NOW, held=held, discards=discards
    )

    past = html.split("<table id='past-key-lifetime'>")[1].split("</table>")[0]
    assert old in past
    assert fresh not in past
    assert "permanent: &lt;b&gt;400&lt;/b&gt;" in past
    assert "key lifetime (1d)" in html
    assert old in html.split("<table id='held-back'>")[1]
    discarded = html.split("<table id='discards'>")[1]
    assert "&lt;i&gt;test address&lt;/i&gt;" in discarded
    assert "and 2 more" in discarded


def test_an_empty_trail_says_so() -> None:
    html = dlq_trail_section(
        entries=[], key_lifetime_s=DAY, now=NOW, held=[], discards=[]
    )
    assert "None in the DLQ now." in html
    assert "No dead letter was discarded." in html
