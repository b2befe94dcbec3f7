"""The whole chain at a steady rate: HTTP enroll -> commit -> relay -> projection.

The API, `club relay` and `club projector statistics` run as their own processes,
as deployed. Each event is timed from its `occurred_at` (stamped in the API just
before the commit) to the `applied_at` of its inbox row, which the projector
writes in the transaction that applies the effect (the transaction's start: its
commit follows within a few milliseconds).
"""

from __future__ import annotations

from uuid import UUID

import sqlalchemy as sa

from adapters.postgres.tables import inbox
from application.contracts.mapping import published_envelopes
from bench.common import new_lesson, percentiles, students, wait_until_projected
from bench.http import steady
from entrypoints.runtime import bootstrap
from projections import statistics


def chain_latencies(
    container: bootstrap.Container, api: str, rate: float, count: int
) -> dict[str, float]:
    wait_until_projected(container)  # earlier sections' backlog is not ours
    recorder = container.app.recorder
    after = recorder.max_notification_id() or 0
    lesson = new_lesson(container.app, count)
    steady(api, lesson, students(container, count), rate)
    wait_until_projected(container)
    seconds = occurred_to_applied(container, after, lesson)
    assert len(seconds) == count, (len(seconds), count)
    return percentiles(seconds)


def occurred_to_applied(
    container: bootstrap.Container, after: int, lesson: UUID
) -> list[float]:
    """For each enrollment into `lesson` stored after notification `after`, the
    seconds from its `occurred_at` to its statistics inbox row's `applied_at`."""
    notifications = container.app.recorder.select_notifications(
        start=after, limit=10**6, inclusive_of_start=False
    )
    occurred = {
        e.event_id: e.occurred_at
        for e in published_envelopes(container.app.mapper, notifications)
        if e.type == "EnrollmentConfirmed" and e.data["lesson_id"] == str(lesson)
    }
    with container.engine.connect() as conn:
        applied = conn.execute(
            sa.select(inbox.c.event_id, inbox.c.applied_at).where(
                (inbox.c.consumer == statistics.NAME)
                & inbox.c.event_id.in_(list(occurred))
            )
        ).all()
    assert len(applied) == len(occurred), (len(applied), len(occurred))
    return [(at - occurred[event_id]).total_seconds() for event_id, at in applied]
