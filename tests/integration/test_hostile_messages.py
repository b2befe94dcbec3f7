"""Nothing a message contains stops a consumer: malformed bodies and poison events
are dead-lettered with a reason and an owner, and the next good event is applied."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from adapters.nats.consumer import ConsumerRunner
from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM
from adapters.postgres.tables import consumer_positions, first_failures, inbox
from adapters.transient import TRANSIENT
from application.backoff import BackoffPolicy, Jitter
from application.dlq_owners import DEFAULT_OWNER, DlqOwners
from projections import statistics
from tests.integration.helpers import bound_consumer, run, with_js

LESSON_SUBJECT = "club.events.lesson.LessonScheduled"


def lesson_body(lesson: UUID, *, title: str = "Yoga", **data: Any) -> dict:
    return {
        "event_id": str(uuid4()),
        "type": "LessonScheduled",
        "schema_version": 1,
        "aggregate_id": str(lesson),
        "aggregate_version": 1,
        "occurred_at": "2026-11-30T10:00:00Z",
        "data": {
            "lesson_id": str(lesson),
            "title": title,
            "capacity": 5,
            "starts_at": "2026-12-01T10:00:00Z",
            "price_cents": 0,
        }
        | data,
    }


def encoded(body: dict) -> bytes:
    return json.dumps(body).encode()


def with_raw(body: dict, field: str, raw: str) -> bytes:
    """The body with one top-level field's value written as raw JSON text."""
    return encoded(body).replace(
        f'"{field}": {json.dumps(body[field])}'.encode(), f'"{field}": {raw}'.encode()
    )


def hostile_bodies() -> dict[str, bytes]:
    good = lesson_body(uuid4())
    return {
        "not UTF-8": b"\xff\xfe{\x00\x81",
        "empty": b"",
        "a JSON array": b"[1, 2, 3]",
        "a JSON string": b'"LessonScheduled"',
        "event_id a number": encoded(good | {"event_id": 12345}),
        "aggregate_version 1e999999": with_raw(good, "aggregate_version", "1e999999"),
        "schema_version true": encoded(good | {"schema_version": True}),
        "occurred_at naive": encoded(good | {"occurred_at": "2026-11-30T10:00:00"}),
        "data null": encoded(good | {"data": None}),
        "capacity 1e999999": encoded(good).replace(
            b'"capacity": 5', b'"capacity": 1e999999'
        ),
        "lesson_id a number": encoded(lesson_body(uuid4(), lesson_id=7)),
        "deeply nested": b'{"data": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
        "a header in the type": encoded(good | {"type": "X\r\nClub-Owner: mallory"}),
    }


def lesson_row(engine: sa.Engine, lesson_id: UUID) -> Any:
    with engine.connect() as conn:
        return conn.execute(
            sa.select(statistics.lessons).where(
                statistics.lessons.c.lesson_id == lesson_id
            )
        ).one_or_none()


async def publish(js, body: bytes, subject: str = LESSON_SUBJECT) -> int:
    ack = await js.publish(subject, body, headers={"Nats-Msg-Id": str(uuid4())})
    return ack.seq


async def dead_letters(js, consumer: str) -> list:
    info = await js.stream_info(DLQ_STREAM)
    if info.state.messages == 0:
        return []
    found = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(DLQ_STREAM, seq)
        if msg.subject == f"club.dlq.{consumer}":
            found.append(msg)
    return found


async def settle(runner: ConsumerRunner, sub, js, timeout: float = 20.0) -> list:
    """Poll until the consumer has nothing pending or waiting for an ack."""
    outcomes = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outcomes.append(await runner.poll(sub))
        info = await js.consumer_info(EVENTS_STREAM, runner.name)
        if info.num_pending == 0 and info.num_ack_pending == 0:
            return outcomes
    pytest.fail(f"{runner.name} still has messages pending after {timeout}s")


def runner_for(name: str, js, container, **kw: Any) -> ConsumerRunner:
    return ConsumerRunner(
        name=name, apply=statistics.apply, js=js, engine=container.engine,
        fetch_timeout=0.2, **kw,
    )  # fmt: skip


def test_every_malformed_body_is_dead_lettered_and_the_next_event_applied(
    container, migrated
) -> None:
    _, nats_url = migrated
    name = f"malformed-{uuid4().hex[:6]}"
    bodies = hostile_bodies()
    good_lesson = uuid4()

    async def body(js, _):
        sub = await bound_consumer(js, name)
        for hostile in bodies.values():
            await publish(js, hostile)
        # JetStream obeys this header: copied onto the DLQ publish, it would fail.
        expects = {"Nats-Msg-Id": str(uuid4()), "Nats-Expected-Stream": EVENTS_STREAM}
        await js.publish(LESSON_SUBJECT, b"{}", headers=expects)
        await publish(js, encoded(lesson_body(good_lesson, title="After")))
        outcomes = await settle(runner_for(name, js, container), sub, js)
        return outcomes, await dead_letters(js, name)

    outcomes, dlq = run(with_js(nats_url, body))
    assert sum(o.applied for o in outcomes) == 1
    assert len(dlq) == len(bodies) + 1  # each one, none lost, none twice
    expected = [*bodies.values(), b"{}"]
    assert sorted(bytes(m.data or b"") for m in dlq) == sorted(expected)
    for msg in dlq:
        reason = msg.headers["Club-Reason"]
        assert reason.startswith(("malformed:", "unknown-schema:")), reason
        assert reason.isprintable()  # no CR LF to split the header block
        assert msg.headers["Club-Owner"] == DEFAULT_OWNER  # not the body's "mallory"
        assert msg.headers["Club-Original-Subject"] == LESSON_SUBJECT
        # Dead-lettered on its first delivery: that was its first failure.
        first = datetime.fromisoformat(msg.headers["Club-First-Failed-At"])
        assert abs(first - msg.time) < timedelta(seconds=5)
    assert lesson_row(container.engine, good_lesson).title == "After"


def test_a_poison_event_is_retried_then_dead_lettered_and_its_batch_mates_applied(
    container, migrated
) -> None:
    """PostgreSQL refuses NUL in text: the event reads fine and fails to apply."""
    _, nats_url = migrated
    name = f"poison-{uuid4().hex[:6]}"
    owners = DlqOwners.parse(
        f"{name}/LessonScheduled=team-statistics,{name}=team-other",
        consumers=[name],
        event_types=["LessonScheduled"],
    )
    before, poison, after = uuid4(), uuid4(), uuid4()
    poison_body = lesson_body(poison, title="Yo\u0000ga")
    before_body = lesson_body(before, title="Before")
    after_body = lesson_body(after, title="After")

    async def body(js, _):
        sub = await bound_consumer(js, name)
        await publish(js, encoded(before_body))
        poison_seq = await publish(js, encoded(poison_body))
        last_seq = await publish(js, encoded(after_body))
        await asyncio.sleep(1.5)  # stored well before its first attempt
        runner = runner_for(
            name,
            js,
            container,
            poison_attempts=3,
            poison_retry=BackoffPolicy(first=0.5, cap=60.0, jitter=Jitter.NONE),
            owner=owners.for_consumer(name),
        )
        outcomes = await settle(runner, sub, js)
        return outcomes, await dead_letters(js, name), poison_seq, last_seq

    outcomes, dlq, poison_seq, last_seq = run(with_js(nats_url, body))
    # The first batch held all three: the healthy two were applied at once.
    first = outcomes[0]
    assert [item.delivery.stream_seq for item in first.retrying] == [poison_seq]
    assert first.applied >= 2  # (with the good events other tests published)
    assert lesson_row(container.engine, before).title == "Before"
    assert lesson_row(container.engine, after).title == "After"
    assert lesson_row(container.engine, poison) is None
    [dead] = [m for m in dlq if m.headers["Club-Reason"].startswith("poison")]
    reason = dead.headers["Club-Reason"]
    assert reason.startswith("poison: DataError: PostgreSQL text fields cannot"), reason
    assert dead.headers["Club-Owner"] == "team-statistics"  # its type's rule
    # The first failed attempt, neither the store time (1.5 s before it) nor the
    # dead-lettering (the NAK delays, 0.5 s then 1 s, lie between them).
    stored = datetime.fromisoformat(dead.headers["Club-Original-Stored-At"])
    first = datetime.fromisoformat(dead.headers["Club-First-Failed-At"])
    assert first - stored >= timedelta(seconds=1.4)
    assert dead.time - first >= timedelta(seconds=1.4)
    with container.engine.connect() as conn:
        kept = conn.execute(
            sa.select(first_failures).where(first_failures.c.consumer == name)
        ).all()
    assert kept == []  # forgotten once dead-lettered
    assert "need not wait" in dead.headers["Club-Order"]  # why nothing queues behind
    assert dead.headers["Club-Delivery-Count"] == "3"  # retried, then given up
    assert int(dead.headers["Club-Original-Stream-Seq"]) == poison_seq
    assert json.loads(dead.data) == poison_body
    assert (
        REGISTRY.get_sample_value("club_poison_events_total", {"consumer": name}) == 3
    )
    with container.engine.connect() as conn:
        applied = set(
            conn.execute(
                sa.select(inbox.c.event_id).where(inbox.c.consumer == name)
            ).scalars()
        )
        position = conn.execute(
            sa.select(consumer_positions.c.stream_seq).where(
                consumer_positions.c.consumer == name
            )
        ).scalar_one()
    assert UUID(poison_body["event_id"]) not in applied  # a replay may apply it
    assert applied >= {UUID(b["event_id"]) for b in (before_body, after_body)}
    assert position == last_seq


def test_a_connection_level_failure_is_waited_out_not_dead_lettered(
    container, migrated
) -> None:
    """A lock the consumer cannot get in time (a real lock_timeout) is transient."""
    _, nats_url = migrated
    name = f"transient-{uuid4().hex[:6]}"
    lesson = uuid4()

    def apply_within_100ms(conn: sa.Connection, envelopes) -> None:
        conn.exec_driver_sql("SET LOCAL lock_timeout = '100ms'")
        statistics.apply(conn, envelopes)

    async def body(js, _):
        sub = await bound_consumer(js, name)
        seq = await publish(js, encoded(lesson_body(lesson, title="Later")))
        runner = ConsumerRunner(
            name=name, apply=apply_within_100ms, js=js, engine=container.engine,
            fetch_timeout=0.2, poison_attempts=1,
        )  # fmt: skip
        with container.engine.connect() as holder, holder.begin():
            holder.exec_driver_sql(
                "LOCK TABLE statistics_lessons IN ACCESS EXCLUSIVE MODE"
            )
            with pytest.raises(TRANSIENT):
                await runner.poll(sub)
        await asyncio.sleep(2.5)  # the NAK's delay
        await settle(runner, sub, js)
        dlq = await dead_letters(js, name)
        return [m for m in dlq if m.headers["Club-Original-Stream-Seq"] == str(seq)]

    ours = run(with_js(nats_url, body))
    assert ours == []  # even with poison_attempts=1: a lock wait is no poison
    assert lesson_row(container.engine, lesson).title == "Later"


def test_an_outage_waited_out_does_not_count_toward_the_poison_bound(
    container, migrated
) -> None:
    """Redelivered through an outage (a real lock_timeout, twice), then met by a
    bug: that is its first poison failure of two allowed, so it is retried, and
    applied once the bug is gone; its failure row goes with that commit."""
    _, nats_url = migrated
    name = f"outage-then-bug-{uuid4().hex[:6]}"
    lesson = uuid4()
    bug = [False]

    def apply_flaky(conn: sa.Connection, envelopes) -> None:
        conn.exec_driver_sql("SET LOCAL lock_timeout = '100ms'")
        statistics.apply(conn, envelopes)
        if bug[0] and any(e.aggregate_id == lesson for e in envelopes):
            raise RuntimeError("a bug this event meets")

    async def body(js, _):
        sub = await bound_consumer(js, name)
        seq = await publish(js, encoded(lesson_body(lesson, title="Later")))
        runner = ConsumerRunner(
            name=name, apply=apply_flaky, js=js, engine=container.engine,
            fetch_timeout=0.2, poison_attempts=2,
            poison_retry=BackoffPolicy(first=0.2, cap=1.0, jitter=Jitter.NONE),
        )  # fmt: skip
        waited = 0
        deadline = time.monotonic() + 20
        with container.engine.connect() as holder, holder.begin():
            holder.exec_driver_sql(
                "LOCK TABLE statistics_lessons IN ACCESS EXCLUSIVE MODE"
            )
            while waited < 2 and time.monotonic() < deadline:
                with contextlib.suppress(*TRANSIENT):
                    await runner.poll(sub)
                    continue
                waited += 1
        bug[0] = True
        poisoned = None
        while poisoned is None and time.monotonic() < deadline:
            outcome = await runner.poll(sub)
            if any(item.delivery.stream_seq == seq for item in outcome.retrying):
                poisoned = outcome
        bug[0] = False
        await settle(runner, sub, js)
        dlq = await dead_letters(js, name)
        ours = [m for m in dlq if m.headers["Club-Original-Stream-Seq"] == str(seq)]
        return waited, poisoned, ours, seq

    waited, poisoned, ours, seq = run(with_js(nats_url, body))
    assert waited == 2  # so delivered three times: past the bound of 2 deliveries
    reasons = [m.headers["Club-Reason"] for m in ours]
    assert poisoned is not None, f"never retried as poison; dead letters: {reasons}"
    assert poisoned.poison_failures[seq] == 1  # retried, not dead-lettered
    assert ours == []
    assert lesson_row(container.engine, lesson).title == "Later"
    with container.engine.connect() as conn:
        kept = conn.execute(
            sa.select(first_failures).where(first_failures.c.consumer == name)
        ).all()
    assert kept == []


def test_a_body_too_large_to_copy_with_headers_is_dead_lettered_without_it(
    container, migrated
) -> None:
    """The broker limits headers + body: the copy keeps its headers, not its body."""
    _, nats_url = migrated
    name = f"large-{uuid4().hex[:6]}"
    good_lesson = uuid4()

    async def body(js, nc):
        sub = await bound_consumer(js, name)
        large_seq = await publish(js, b"x" * (nc.max_payload - 200))
        await publish(js, encoded(lesson_body(good_lesson, title="After")))
        # (poison_attempts=1: the earlier tests' poison event need not wait)
        await settle(runner_for(name, js, container, poison_attempts=1), sub, js)
        dlq = await dead_letters(js, name)
        return [
            m for m in dlq if m.headers["Club-Original-Stream-Seq"] == str(large_seq)
        ]

    [dead] = run(with_js(nats_url, body))
    assert dead.headers["Club-Reason"].startswith("malformed:")
    assert "too large with these headers" in dead.headers["Club-Body-Omitted"]
    assert not dead.data
    assert lesson_row(container.engine, good_lesson).title == "After"
