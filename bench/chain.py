"""The whole chain at a steady rate: HTTP enroll -> commit -> relay -> projection.

The API and `club relay` run as their own processes; the statistics projector runs
here, the same runner `club projector statistics` uses, timing each event from its
`occurred_at` (stamped in the API before the commit, so the figure is an upper
bound on commit -> effect) to the moment its projection transaction has committed.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from uuid import UUID, uuid4

from adapters.nats.consumer import BatchOutcome, ConsumerRunner, Incoming
from adapters.nats.streams import connect
from bench.common import new_lesson, percentiles, students
from bench.http import steady
from projections import statistics


class TimedRunner(ConsumerRunner):
    """Records, per lesson, how long each event took to reach its committed effect."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.delays: dict[UUID, list[float]] = {}

    def _commit(self, batch: list[Incoming], last_seq: int) -> BatchOutcome:
        outcome = super()._commit(batch, last_seq)
        now = datetime.now(UTC)
        for item in batch:
            envelope = item.delivery.envelope
            if envelope.type == "EnrollmentConfirmed":
                lesson = UUID(envelope.data["lesson_id"])
                delay = (now - envelope.occurred_at).total_seconds()
                self.delays.setdefault(lesson, []).append(delay)
        return outcome


def chain_latencies(
    container, api: str, nats_url: str, rate: float, count: int
) -> dict[str, float]:
    lesson = new_lesson(container.app, count)
    who = students(container, count)

    async def measure() -> list[float]:
        nc = await connect(nats_url, name="bench-chain-projector")
        runner = TimedRunner(
            name=f"bench-chain-{uuid4().hex[:6]}",
            apply=statistics.apply,
            js=nc.jetstream(),
            engine=container.engine,
            fetch_timeout=0.05,
        )
        stop = asyncio.Event()
        projecting = asyncio.create_task(runner.run(stop))
        await asyncio.to_thread(steady, api, lesson, who, rate)
        async with asyncio.timeout(60):  # the projection catches up
            while len(runner.delays.get(lesson, ())) < count:
                await asyncio.sleep(0.05)
        stop.set()
        await projecting
        await nc.close()
        return runner.delays[lesson]

    return percentiles(asyncio.run(measure()))
