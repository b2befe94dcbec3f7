"""Projection catch-up: `club projector statistics`'s runner beside hand-written SQL.

Both read the same stream from a fresh durable consumer, 256 messages a fetch,
and ack every message after their transaction commits. Club's runner also writes
the inbox (id + body hash), takes the consumer's advisory lock and moves the
position; the raw loop only sums counts per lesson and upserts them.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from uuid import uuid4

import psycopg
import sqlalchemy as sa
from nats.js import JetStreamContext

from adapters.nats.consumer import ConsumerRunner
from adapters.nats.pull import bind_pull
from adapters.nats.streams import EVENTS_STREAM, connect, ensure_consumer
from entrypoints.runtime.role_loop import run_on_role_loop
from projections import statistics

BATCH = 256


async def _durable(
    js: JetStreamContext, name: str, *, as_club_binds: bool
) -> JetStreamContext.PullSubscription:
    """A fresh durable consumer, configured as `club projector`'s own, bound as
    `club projector` binds it (adapters/nats/pull.py) or the library's way."""
    await ensure_consumer(js, name)
    if as_club_binds:
        return await bind_pull(js, durable=name, stream=EVENTS_STREAM)
    return await js.pull_subscribe_bind(durable=name, stream=EVENTS_STREAM)


def _rate(nats_url: str, drain: Callable[[JetStreamContext, int], Awaitable[int]]):
    async def one() -> float:
        nc = await connect(nats_url, name="bench-projection")
        js = nc.jetstream()
        total = (await js.stream_info(EVENTS_STREAM)).state.messages
        start = time.perf_counter()
        done = await drain(js, total)
        elapsed = time.perf_counter() - start
        await nc.close()
        return done / elapsed

    return run_on_role_loop(one())


def club_catchup_rate(engine: sa.Engine, nats_url: str) -> float:
    async def drain(js: JetStreamContext, total: int) -> int:
        name = f"bench-club-{uuid4().hex[:6]}"
        sub = await _durable(js, name, as_club_binds=True)
        runner = ConsumerRunner(
            name=name, apply=statistics.apply, js=js, engine=engine, batch_size=BATCH
        )
        done = 0
        while done < total:
            outcome = await runner.poll(sub)
            done += outcome.applied + outcome.duplicates + len(outcome.dead)
        return done

    return _rate(nats_url, drain)


UPSERT = """
INSERT INTO statistics_lessons (lesson_id, confirmed, cancelled)
VALUES (%s, %s, %s)
ON CONFLICT (lesson_id) DO UPDATE SET
  confirmed = statistics_lessons.confirmed + EXCLUDED.confirmed,
  cancelled = statistics_lessons.cancelled + EXCLUDED.cancelled
"""


def raw_catchup_rate(database_url: str, nats_url: str) -> float:
    """One hand-written transaction per fetched batch, then ack: the floor."""

    async def drain(js: JetStreamContext, total: int) -> int:
        sub = await _durable(js, f"bench-raw-{uuid4().hex[:6]}", as_club_binds=False)
        done = 0
        with psycopg.connect(database_url) as conn:
            while done < total:
                msgs = await sub.fetch(BATCH, timeout=5)
                confirmed: Counter[str] = Counter()
                cancelled: Counter[str] = Counter()
                for msg in msgs:
                    body = json.loads(msg.data)
                    kind = body["type"]
                    if kind == "EnrollmentConfirmed":
                        confirmed[body["data"]["lesson_id"]] += 1
                    elif kind == "EnrollmentCancelled":
                        cancelled[body["data"]["lesson_id"]] += 1
                rows = [
                    (lesson, confirmed[lesson], cancelled[lesson])
                    for lesson in sorted(confirmed.keys() | cancelled.keys())
                ]
                with conn.transaction(), conn.cursor() as cur:
                    cur.executemany(UPSERT, rows)
                for msg in msgs:
                    await msg.ack()
                done += len(msgs)
        return done

    return _rate(nats_url, drain)
