"""The consumer runner and the statistics projection on real servers."""

from __future__ import annotations

import asyncio
import json
from uuid import uuid4

import sqlalchemy as sa
from prometheus_client import REGISTRY

from adapters.nats.consumer import ConsumerRunner
from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM
from adapters.postgres.tables import inbox
from projections import statistics
from tests.integration.helpers import (
    bound_consumer,
    lesson_with_enrollments,
    make_relay,
    relay_all,
    run,
    stream_messages,
    with_js,
)


class CrashBeforeAck(ConsumerRunner):
    """Commits like the real runner, then 'dies' before acking."""

    async def _acknowledge(self, msgs) -> None:
        return None


def statistics_runner(cls, name: str, js, container) -> ConsumerRunner:
    return cls(
        name=name, apply=statistics.apply, js=js, engine=container.engine,
        fetch_timeout=0.5,
    )  # fmt: skip


def counts(container, lesson_id) -> tuple[int, int]:
    with container.engine.connect() as conn:
        row = conn.execute(
            sa.select(
                statistics.lessons.c.confirmed, statistics.lessons.c.cancelled
            ).where(statistics.lessons.c.lesson_id == lesson_id)
        ).one()
    return row.confirmed, row.cancelled


async def drain(runner: ConsumerRunner, sub, rounds: int = 5) -> list:
    outcomes = []
    for _ in range(rounds):
        outcome = await runner.poll(sub)
        outcomes.append(outcome)
        if not (outcome.applied or outcome.duplicates or outcome.dead):
            break
    return outcomes


async def caught_up(js, nc, container, database_url: str, name: str):
    """All that is stored relayed, and a new statistics consumer `name` that has
    applied it: what a test publishes next is what the consumer sees."""
    await relay_all(make_relay(container, nc, database_url))
    sub = await bound_consumer(js, name)
    runner = statistics_runner(ConsumerRunner, name, js, container)
    await drain(runner, sub)
    return runner, sub


async def publish_json(js, subject: str, envelope: dict, msg_id: str) -> None:
    """A copy the relay never made: `envelope` as JSON under its own Nats-Msg-Id."""
    body = json.dumps(envelope).encode()
    await js.publish(subject, body, headers={"Nats-Msg-Id": msg_id})


def test_statistics_follow_the_events(container, migrated) -> None:
    database_url, nats_url = migrated
    lesson_id = lesson_with_enrollments(container, 3)

    async def body(js, nc):
        await relay_all(make_relay(container, nc, database_url))
        runner = statistics_runner(ConsumerRunner, "statistics", js, container)
        sub = await js.pull_subscribe_bind(durable="statistics", stream=EVENTS_STREAM)
        await drain(runner, sub)

    run(with_js(nats_url, body))
    assert counts(container, lesson_id) == (3, 0)


def test_a_redelivered_event_changes_nothing(container, migrated) -> None:
    database_url, nats_url = migrated
    name = f"redelivery-{uuid4().hex[:6]}"
    lesson_id = lesson_with_enrollments(container, 2)

    async def body(js, nc):
        await relay_all(make_relay(container, nc, database_url))
        sub = await bound_consumer(js, name, ack_wait=1.0)
        crashing = statistics_runner(CrashBeforeAck, name, js, container)
        first = await crashing.poll(sub)
        before = counts(container, lesson_id)
        await asyncio.sleep(1.5)  # the broker gives up on the ack and redelivers
        runner = statistics_runner(ConsumerRunner, name, js, container)
        second = await runner.poll(sub)
        return first, before, second

    first, before, second = run(with_js(nats_url, body))
    assert first.applied > 0
    assert second.applied == 0
    assert second.duplicates == first.applied
    # Two deliveries and one change: the expected outcome, not a failure.
    assert counts(container, lesson_id) == before


def test_a_republish_with_a_new_msg_id_changes_no_counter(container, migrated) -> None:
    database_url, nats_url = migrated
    name = f"republish-{uuid4().hex[:6]}"
    lesson_id = lesson_with_enrollments(container, 1)

    async def body(js, nc):
        runner, sub = await caught_up(js, nc, container, database_url, name)
        before = counts(container, lesson_id)
        originals = await stream_messages(js)
        for msg in originals:  # e.g. `relay rewind` after the broker lost data
            headers = dict(msg.headers) | {"Nats-Msg-Id": f"again-{uuid4()}"}
            await js.publish(msg.subject, msg.data, headers=headers)
        outcomes = await drain(runner, sub)
        return before, outcomes, len(originals)

    before, outcomes, published = run(with_js(nats_url, body))
    assert sum(o.duplicates for o in outcomes) > 0
    assert sum(o.applied for o in outcomes) == 0
    assert counts(container, lesson_id) == before
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(sa.func.count())
            .select_from(inbox)
            .where(inbox.c.consumer == name)
        ).scalar_one()
    assert rows == published  # one inbox row per event, however often delivered


def test_an_unknown_schema_version_is_dead_lettered_and_the_consumer_goes_on(
    container, migrated
) -> None:
    database_url, nats_url = migrated
    name = f"unknown-{uuid4().hex[:6]}"

    async def body(js, nc):
        runner, sub = await caught_up(js, nc, container, database_url, name)
        [template] = (await stream_messages(js))[-1:]
        future = json.loads(template.data) | {
            "schema_version": 99,
            "event_id": str(uuid4()),
        }
        await publish_json(js, template.subject, future, future["event_id"])
        lesson_id = lesson_with_enrollments(container, 1)
        await relay_all(make_relay(container, nc, database_url))
        outcomes = await drain(runner, sub)
        dlq = await js.get_last_msg(DLQ_STREAM, f"club.dlq.{name}")
        return lesson_id, outcomes, dlq

    lesson_id, outcomes, dlq = run(with_js(nats_url, body))
    assert sum(len(o.dead) for o in outcomes) == 1
    assert dlq.headers["Club-Reason"].startswith("unknown-schema")
    assert json.loads(dlq.data)["schema_version"] == 99
    assert counts(container, lesson_id) == (1, 0)  # the next event was still applied


def test_same_event_id_with_other_content_is_a_dead_lettered_conflict(
    container, migrated
) -> None:
    database_url, nats_url = migrated
    name = f"conflict-{uuid4().hex[:6]}"
    lesson_id = lesson_with_enrollments(container, 1)

    async def body(js, nc):
        runner, sub = await caught_up(js, nc, container, database_url, name)
        before = counts(container, lesson_id)
        original = (await stream_messages(js))[-1]
        tampered = json.loads(original.data)
        tampered["data"]["student_id"] = "someone-else"
        await publish_json(js, original.subject, tampered, f"tampered-{uuid4()}")
        later = lesson_with_enrollments(container, 1)
        await relay_all(make_relay(container, nc, database_url))
        outcomes = await drain(runner, sub)
        dlq = await js.get_last_msg(DLQ_STREAM, f"club.dlq.{name}")
        return before, later, outcomes, dlq

    before, later, outcomes, dlq = run(with_js(nats_url, body))
    [dead] = [d for o in outcomes for d in o.dead]
    assert dead.reason.startswith("contract-conflict")
    assert dlq.headers["Club-Reason"].startswith("contract-conflict")
    assert (
        dlq.headers["Club-Original-Subject"]
        == "club.events.enrollment.EnrollmentConfirmed"
    )
    assert int(dlq.headers["Club-Original-Stream-Seq"]) > 0
    assert int(dlq.headers["Club-Delivery-Count"]) == 1
    assert json.loads(dlq.data)["data"]["student_id"] == "someone-else"
    assert counts(container, lesson_id) == before  # no effect from the conflict
    assert counts(container, later) == (1, 0)  # and the consumer went on
    assert (
        REGISTRY.get_sample_value("club_contract_conflicts_total", {"consumer": name})
        == 1
    )


def test_v1_copies_of_events_published_as_v2_are_duplicates_not_conflicts(
    container, migrated
) -> None:
    """After the v1 -> v2 switch, a rewind (or old unconsumed copies) delivers the
    same event in both versions: one meaning, so no false contract-conflict."""
    database_url, nats_url = migrated
    name = f"versions-{uuid4().hex[:6]}"
    lesson_id = lesson_with_enrollments(container, 2)

    async def body(js, nc):
        runner, sub = await caught_up(js, nc, container, database_url, name)
        before = counts(container, lesson_id)
        v2_copies = [
            m
            for m in await stream_messages(js)
            if json.loads(m.data)["type"] == "EnrollmentConfirmed"
            and json.loads(m.data)["data"]["lesson_id"] == str(lesson_id)
        ]
        for msg in v2_copies:
            v1 = json.loads(msg.data) | {"schema_version": 1}
            assert v1["data"].pop("lesson_starts_at") is not None  # v2 knows more
            await publish_json(js, msg.subject, v1, f"v1-{uuid4()}")
        outcomes = await drain(runner, sub)
        return before, len(v2_copies), outcomes

    before, copies, outcomes = run(with_js(nats_url, body))
    assert copies == 2
    assert [d.reason for o in outcomes for d in o.dead] == []
    assert sum(o.duplicates for o in outcomes) == copies
    assert counts(container, lesson_id) == before == (2, 0)
