"""A notification's age, as the time bound of its retries reads it: since its row
was made (the provider first heard its key), on the database's clock, through the
store the worker uses (decide's table: tests/unit/test_outage_decisions.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import sqlalchemy as sa

from adapters.postgres.tables import notifications
from application.notification_record import NotificationRequest
from application.notifications import (
    GiveUp,
    Kind,
    LessonFacts,
    Notifier,
    RetryPolicy,
    State,
)
from domain.student import StudentProfile
from tests.unit.test_notifier import KnownPurchases, ScriptedProvider

HOUR = 3600.0
STARTS = datetime(2027, 1, 4, 10, 0, tzinfo=UTC)


def request() -> NotificationRequest:
    return NotificationRequest(
        event_id=uuid4(),
        kind=Kind.CONFIRMATION,
        enrollment_id=uuid4(),
        lesson_id=uuid4(),
        student_id="ann",
    )


def test_the_age_is_read_from_the_rows_creation_on_the_database_clock(
    container,
) -> None:
    store = container.notifications
    asked = request()
    assert store.open_sending(asked)
    store.mark(asked.event_id, State.FAILED, attempts=1, error="503")
    assert store.open(asked).age_s < 60
    with container.engine.begin() as conn:
        conn.execute(
            sa.update(notifications)
            .where(notifications.c.event_id == asked.event_id)
            .values(created_at=sa.func.now() - sa.text("interval '13 hours'"))
        )
    found = store.open(asked)
    assert 13 * HOUR <= found.age_s < 13 * HOUR + 60
    assert found.state is State.FAILED
    assert found.attempts == 1


def test_past_the_bound_the_notifier_gives_up_without_calling_the_provider(
    container,
) -> None:
    store = container.notifications
    asked = request()
    container.students.save(
        StudentProfile.create(student_id="ann", email="ann@example.org", name="Ann")
    )
    assert store.open_sending(asked)
    store.mark(asked.event_id, State.FAILED, attempts=1, error="provider answered 503")
    with container.engine.begin() as conn:
        conn.execute(
            sa.update(notifications)
            .where(notifications.c.event_id == asked.event_id)
            .values(created_at=sa.func.now() - sa.text("interval '13 hours'"))
        )
    provider = ScriptedProvider()
    notifier = Notifier(
        store=store,
        provider=provider,
        students=container.students,
        lessons=lambda _id: LessonFacts(title="Yoga", starts_at=STARTS),
        purchases=KnownPurchases(),
        policy=RetryPolicy(max_attempts=10, give_up_after=12 * HOUR),
    )
    outcome = notifier.handle(asked)
    assert isinstance(outcome, GiveUp)
    assert "CLUB_NOTIFY_GIVE_UP_AFTER" in outcome.reason
    assert provider.sends == 0
    assert store.open(asked).state is State.DEAD_LETTERED
