"""The three facts a crash test compares: the enrollment, the intent, the counter."""

from __future__ import annotations

import asyncio
from uuid import UUID

import attrs
import httpx
import sqlalchemy as sa

from adapters.postgres.tables import inbox
from application.ids import enrollment_id_for, event_id
from entrypoints.runtime.bootstrap import Container
from projections import statistics
from tests.api_client import ClubClient
from tests.integration.helpers import stream_messages, with_js
from tests.stack import eventually


@attrs.frozen
class Facts:
    enrollment_exists: bool
    intent_recorded: int  # Enrollment.Confirmed rows in the event store
    stream_copies: int  # messages with its event_id in CLUB_EVENTS
    counter: int  # statistics: confirmed enrollments of the lesson
    inbox_rows: int  # statistics consumer's inbox rows for the event


def setup_lesson(api: str, capacity: int = 3) -> tuple[str, str]:
    """A lesson and a student to enroll in it."""
    with ClubClient(api) as club:
        return club.lesson(capacity=capacity, title="Crash"), club.student()


def statistics_row_exists(container: Container, lesson_id: str) -> bool:
    with container.engine.connect() as conn:
        found = conn.execute(
            sa.select(statistics.lessons.c.lesson_id).where(
                statistics.lessons.c.lesson_id == UUID(lesson_id)
            )
        ).first()
    return found is not None


def enroll(api: str, lesson_id: str, student: str, key: str) -> httpx.Response:
    with ClubClient(api, timeout=10) as club:
        return club.enroll(lesson_id, student, key)


def facts(container: Container, nats_url: str, lesson_id: str, key: str) -> Facts:
    enrollment = enrollment_id_for(UUID(lesson_id), key)
    confirmed = event_id(enrollment, 1)
    with container.engine.connect() as conn:
        intent = conn.execute(
            sa.text("SELECT count(*) FROM club_events WHERE originator_id = :id"),
            {"id": enrollment},
        ).scalar_one()
        counter = conn.execute(
            sa.select(statistics.lessons.c.confirmed).where(
                statistics.lessons.c.lesson_id == UUID(lesson_id)
            )
        ).scalar()
        rows = conn.execute(
            sa.select(sa.func.count())
            .select_from(inbox)
            .where((inbox.c.consumer == "statistics") & (inbox.c.event_id == confirmed))
        ).scalar_one()

    async def copies(js, _) -> int:
        return sum(
            1
            for m in await stream_messages(js)
            if m.headers["Nats-Msg-Id"] == str(confirmed)
        )

    return Facts(
        enrollment_exists=intent > 0,
        intent_recorded=intent,
        stream_copies=asyncio.run(with_js(nats_url, copies)),
        counter=counter or 0,
        inbox_rows=rows,
    )


def settled(container: Container, nats_url: str, lesson_id: str, key: str) -> Facts:
    """Wait until the chain has carried the enrollment to the statistics."""
    return eventually(
        lambda: (f := facts(container, nats_url, lesson_id, key)).counter >= 1 and f,
        timeout=30,
    )
