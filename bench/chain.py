"""The whole chain at a steady rate: HTTP enroll -> commit -> relay -> projection.

The API, `club relay` and `club projector statistics` run as their own processes,
as deployed. Each event is timed from its `occurred_at` (stamped in the API just
before the commit) to the `applied_at` of its inbox row, which the projector
writes in the transaction that applies the effect (the transaction's start: its
commit follows within a few milliseconds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs
import sqlalchemy as sa

from adapters.nats.streams import EVENTS_STREAM, connect
from adapters.postgres.tables import inbox
from application.contracts.mapping import published_envelopes
from bench.common import (
    Staged,
    new_lesson,
    percentiles,
    students,
    wait_until_projected,
)
from bench.http import http_enrollments, steady
from entrypoints.runtime import bootstrap
from projections import statistics

TO_STREAM = "occurred -> stored"  # the API's commit, NOTIFY, the relay, the broker
FROM_STREAM = "stored -> applied"  # delivery, the projector's wake-up and BEGIN


def chain_enrollments(container: bootstrap.Container, api: str, clients: int) -> Staged:
    """The chain's capacity: `clients` closed-loop clients enrolling over HTTP while
    the relay and the projector run, counted until the projection holds every
    enrollment — what the API takes when the rest of the chain shares its CPU."""
    enroll = http_enrollments(container, api, clients)

    def prepare() -> Any:
        prepared = enroll.prepare()
        wait_until_projected(container)  # nothing older is drained on the clock
        return prepared

    def run(prepared: Any) -> int:
        count = enroll.run(prepared)
        wait_until_projected(container, poll=0.005)
        return count

    return Staged(prepare, run)


def chain_latencies(
    container: bootstrap.Container,
    api: str,
    rate: float,
    count: int,
    nats_url: str | None = None,
) -> dict[str, float]:
    """occurred -> applied percentiles; with `nats_url`, also each side of where
    JetStream stored the event (`to_stream_*`, `from_stream_*`: see `hops`)."""
    wait_until_projected(container)  # earlier sections' backlog is not ours
    recorder = container.app.recorder
    after = recorder.max_notification_id() or 0
    lesson = new_lesson(container.app, count)
    _, window = steady(api, lesson, students(container, count), rate)
    wait_until_projected(container)
    applied = enrollments_applied(container, after, lesson)
    assert len(applied) == count, (len(applied), count)
    figures = percentiles(occurred_to_applied(applied)) | window
    if nats_url is not None:
        split = hops(applied, nats_url)
        for side, hop in (("to_stream", TO_STREAM), ("from_stream", FROM_STREAM)):
            for key, value in split[hop].items():
                figures[f"{side}_{key}"] = value
    return figures


def occurred_to_applied(applied: Sequence[Applied]) -> list[float]:
    """The seconds from each enrollment's `occurred_at` to its inbox row's
    `applied_at`."""
    return [(row.applied_at - row.occurred_at).total_seconds() for row in applied]


@attrs.frozen
class Applied:
    occurred_at: datetime
    applied_at: datetime
    stream_seq: int


def enrollments_applied(
    container: bootstrap.Container, after: int, lesson: UUID
) -> list[Applied]:
    """Each enrollment into `lesson` stored after notification `after`: when it
    occurred, and its statistics inbox row's `applied_at` and stream sequence."""
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
            sa.select(inbox.c.event_id, inbox.c.applied_at, inbox.c.stream_seq).where(
                (inbox.c.consumer == statistics.NAME)
                & inbox.c.event_id.in_(list(occurred))
            )
        ).all()
    assert len(applied) == len(occurred), (len(applied), len(occurred))
    return [Applied(occurred[i], at, seq) for i, at, seq in applied]


def hops(applied: Sequence[Applied], nats_url: str) -> dict[str, dict[str, float]]:
    """occurred -> applied split where JetStream stored the event: percentiles of
    occurred -> stored (the API's commit and the relay) and stored -> applied (the
    broker's delivery and the projector's wake-up), from the stream's own time."""

    async def stored_times() -> dict[int, datetime]:
        nc = await connect(nats_url, name="bench-chain-hops")
        try:
            js = nc.jetstream()
            times = {}
            for row in applied:
                at = (await js.get_msg(EVENTS_STREAM, row.stream_seq)).time
                assert at is not None, row  # the server stamps every stored message
                times[row.stream_seq] = at
            return times
        finally:
            await nc.close()

    stored = asyncio.run(stored_times())
    return {
        TO_STREAM: percentiles(
            [(stored[r.stream_seq] - r.occurred_at).total_seconds() for r in applied]
        ),
        FROM_STREAM: percentiles(
            [(r.applied_at - stored[r.stream_seq]).total_seconds() for r in applied]
        ),
    }
