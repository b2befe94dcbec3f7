"""Who owns the next step, decided from the collected facts alone (no servers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import attrs
import pytest

from adapters.nats.trace_messages import subject_matches
from application.next_steps import (
    ConsumerFact,
    DeadLetterFact,
    EventFact,
    ExportFact,
    NotificationFact,
    RelayFact,
    SagaFact,
    StreamFact,
    Trace,
    next_steps,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ENROLLMENT = UUID("00000000-0000-4000-8000-000000000001")
EVENT = UUID("00000000-0000-5000-8000-0000000000e1")
SUBJECT = "club.events.enrollment.enrollment.confirmed"
LIVE_RELAY = RelayFact(
    position=100,
    holder="relay@host-1",
    lease_until=NOW + timedelta(seconds=5),
    live=True,
)


def stored(
    type_: str,
    notification_id: int,
    *,
    version: int = 1,
    event_id: UUID | None = None,
    **published: object,
) -> EventFact:
    """An event stored at NOW; `published` adds its subject and what it asks for."""
    return EventFact(
        notification_id=notification_id, version=version, type=type_,
        stored_at=NOW, event_id=event_id, **published,
    )  # fmt: skip


def confirmed(notification_id: int = 42) -> EventFact:
    return stored(
        "Enrollment.Confirmed", notification_id, event_id=EVENT, subject=SUBJECT,
        asks_for_email=True,
    )  # fmt: skip


def dead_letter(
    consumer: str, dlq_seq: int, owner: str, reason: str, event_id: str = str(EVENT)
) -> DeadLetterFact:
    return DeadLetterFact(
        dlq_seq=dlq_seq, consumer=consumer, event_id=event_id, reason=reason,
        owner=owner, at=NOW,
    )  # fmt: skip


def consumer(name: str, state: str, kind: str = "projection") -> ConsumerFact:
    return ConsumerFact(
        consumer=name, kind=kind, event_id=EVENT, state=state, pending=3
    )


def email(state: str, attempts: int = 0, error: str | None = None) -> NotificationFact:
    return NotificationFact(
        event_id=EVENT,
        kind="confirmation",
        state=state,
        attempts=attempts,
        last_error=error,
        created_at=NOW,
        updated_at=NOW,
        sent_at=NOW if state == "sent" else None,
    )


def enrollment_trace(**changes: object) -> Trace:
    """Stored, published at seq 41, both projections applied, the e-mail sent."""
    base = Trace(
        id=ENROLLMENT,
        kind="enrollment",
        events=[confirmed()],
        relay=LIVE_RELAY,
        stream={EVENT: StreamFact(event_id=EVENT, seq=41, found_by="inbox")},
        consumers=[
            consumer("rosters", "applied"),
            consumer("statistics", "applied"),
            consumer("notifications", "acked", "work class"),
        ],
        notifications=[email("sent", attempts=1)],
    )
    return attrs.evolve(base, **changes)


def test_a_finished_enrollment_owes_nothing() -> None:
    assert next_steps(enrollment_trace()) == []


def test_an_unpublished_event_is_the_relays_recorded_past_its_position() -> None:
    trace = enrollment_trace(
        relay=attrs.evolve(LIVE_RELAY, position=40),
        consumers=[],
        notifications=[],
        stream={},
    )

    [step] = next_steps(trace)

    assert step.owner == "the relay (lease held by relay@host-1)"
    assert "notification id 42 is past the relay position 40" in step.recorded_in


def test_with_no_relay_holding_the_lease_it_says_to_start_one() -> None:
    trace = enrollment_trace(
        relay=RelayFact(position=0, holder=None, lease_until=None, live=False),
        consumers=[],
        notifications=[],
    )

    [step] = next_steps(trace)

    assert "no relay holds the lease now, start `club relay`" in step.owner


@pytest.mark.parametrize("state", ["pending", "sending", "unknown", "failed"])
def test_a_stuck_email_names_the_notifications_worker_and_its_records(state) -> None:
    trace = enrollment_trace(
        consumers=[
            consumer("rosters", "applied"),
            consumer("statistics", "applied"),
            consumer("notifications", "delivered", "work class"),
        ],
        notifications=[email(state, attempts=2, error="503 from the provider")],
    )

    [step] = next_steps(trace)

    assert step.owner == (
        "the notifications worker pool (durable `notifications` on CLUB_EVENTS)"
    )
    assert "confirmation e-mail" in step.action
    assert step.recorded_in.startswith(
        "the message at CLUB_EVENTS seq 41, not yet acked by durable `notifications`"
    )
    assert f"notification row state={state}, attempts 2" in step.recorded_in
    assert "503 from the provider" in step.recorded_in


def test_an_email_not_opened_yet_is_still_the_workers() -> None:
    trace = enrollment_trace(
        consumers=[consumer("notifications", "waiting", "work class")],
        notifications=[],
    )

    [step] = next_steps(trace)

    assert "notifications worker pool" in step.owner
    assert "no notification row yet" in step.recorded_in


def test_a_dead_letter_names_its_owner_and_dlq_sequence() -> None:
    letter = dead_letter(
        "notifications", 3, "team-x", "permanent: 550 mailbox unavailable"
    )
    trace = enrollment_trace(
        dead_letters=[letter], notifications=[email("dead-lettered", attempts=1)]
    )

    [step] = next_steps(trace)

    assert step.owner == "the DLQ owner team-x"
    assert "`club dlq replay --consumer notifications`" in step.action
    assert step.recorded_in == "CLUB_DLQ seq 3 (consumer notifications)"


def test_a_projection_behind_owns_its_apply() -> None:
    trace = enrollment_trace(
        consumers=[consumer("rosters", "waiting"), consumer("statistics", "applied")]
    )

    [step] = next_steps(trace)

    assert step.owner == "the rosters projector (durable `rosters` on CLUB_EVENTS)"
    assert "seq 41" in step.recorded_in
    assert "3 unfinished" in step.recorded_in


def test_an_event_the_relay_could_not_map_is_the_dlq_owners() -> None:
    letter = dead_letter(
        "relay", 7, "club-operators", "unmappable: no reader", f"{ENROLLMENT}:1"
    )
    undecodable = attrs.evolve(confirmed(), event_id=None, subject=None)
    trace = enrollment_trace(events=[undecodable], dead_letters=[letter])

    [step] = next_steps(trace)

    assert step.owner == "the DLQ owner club-operators"
    assert step.recorded_in == "CLUB_DLQ seq 7 (consumer relay)"


def test_an_internal_event_owes_nothing() -> None:
    internal = stored("Lesson.SeatTaken", 43, version=2)
    assert next_steps(enrollment_trace(events=[confirmed(), internal])) == []


def saga(**changes: object) -> SagaFact:
    base = SagaFact(
        status="payment_pending",
        next_step="waiting for your payment; the seat is held until then",
        payment_open=True,
        payment_id=None,
        refund_state=None,
        review_owner=None,
        review_reason=None,
        enrollment_id=None,
        has_deadline_row=True,
        due_at=NOW,
        claimed_by=None,
        claimed_until=None,
        last_error=None,
        feed_position=50,
    )
    return attrs.evolve(base, **changes)


def purchase_trace(fact: SagaFact) -> Trace:
    reserved = stored("Purchase.Reserved", 44, wakes_saga=True)
    return Trace(
        id=uuid4(), kind="purchase", events=[reserved], relay=LIVE_RELAY, saga=fact
    )


def test_an_open_purchase_is_the_sagas_recorded_in_its_deadline_row() -> None:
    [step] = next_steps(purchase_trace(saga()))

    assert step.owner == "the saga (`club saga`)"
    assert step.action.startswith("waiting for your payment")
    assert "status=payment_pending" in step.recorded_in
    assert f"saga_deadlines row due at {NOW.isoformat()}" in step.recorded_in


def test_a_purchase_the_feed_has_not_reached_says_so() -> None:
    [step] = next_steps(purchase_trace(saga(has_deadline_row=False, due_at=None)))

    assert "no saga_deadlines row yet" in step.recorded_in
    assert "feed is at notification id 50, the purchase's first is 44" in (
        step.recorded_in
    )


def test_a_purchase_in_review_names_its_reviewer() -> None:
    fact = saga(
        status="manual_review",
        review_owner="payments on-call",
        review_reason="payment still unsettled after 8 checks",
    )

    [step] = next_steps(purchase_trace(fact))

    assert step.owner == "payments on-call"
    assert "after 8 checks" in step.action


@pytest.mark.parametrize("status", ["confirmed", "declined", "refunded"])
def test_a_settled_purchase_owes_nothing_to_the_saga(status) -> None:
    assert next_steps(purchase_trace(saga(status=status, payment_open=False))) == []


def test_an_expired_hold_with_a_payment_open_is_still_checked() -> None:
    [step] = next_steps(purchase_trace(saga(status="expired", payment_open=True)))
    assert step.owner == "the saga (`club saga`)"


def export_trace(status: str) -> Trace:
    requested = stored(
        "Export.Requested", 45, event_id=EVENT,
        subject="club.events.export.export.requested", asks_for_export=True,
    )  # fmt: skip
    return Trace(
        id=uuid4(),
        kind="export",
        events=[requested],
        relay=LIVE_RELAY,
        stream={EVENT: StreamFact(event_id=EVENT, seq=9, found_by="stream search")},
        consumers=[consumer("exports", "delivered", "work class")],
        export=ExportFact(
            status=status,
            attempts=1,
            started_at=NOW,
            finished_at=None,
            error=None,
        ),
    )


def test_a_running_export_is_the_exports_workers() -> None:
    [step] = next_steps(export_trace("running"))

    assert step.owner == "the exports worker pool (durable `exports` on CLUB_EVENTS)"
    assert "CLUB_EVENTS seq 9" in step.recorded_in
    assert "status=running" in step.recorded_in


def test_a_finished_export_owes_nothing() -> None:
    assert next_steps(export_trace("succeeded")) == []


@pytest.mark.parametrize(
    ("pattern", "subject", "matches"),
    [
        ("club.events.>", SUBJECT, True),
        ("club.events.export.>", SUBJECT, False),
        ("club.events.*.enrollment.confirmed", SUBJECT, True),
        ("club.events.enrollment", SUBJECT, False),
        ("club.events.>", "club.events", False),
        (None, SUBJECT, True),
    ],
)
def test_durable_filters_match_subjects_as_nats_does(pattern, subject, matches) -> None:
    assert subject_matches(pattern, subject) is matches
