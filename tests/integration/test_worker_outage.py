"""A worker whose own database is down: the delay grows, every slot rests instead of
cycling the stream through failures, and a message that keeps meeting it (its content
may be what times out) ends in the DLQ after a bounded number of deliveries."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from uuid import uuid4

import psycopg

from adapters.nats.dlq import REPLAY_HEADER, dead_letters, replay_subject
from adapters.nats.streams import REPLAY_STREAM
from adapters.nats.worker import Job, Outage, Worker, ensure_worker_consumer
from adapters.postgres.first_failures import FirstFailures
from application.backoff import BackoffPolicy, Jitter
from application.dlq_owners import DlqOwners
from application.notifications import Done, Retry
from tests.integration.helpers import run, with_js, working
from tests.integration.test_hostile_messages import (
    LESSON_SUBJECT,
    encoded,
    lesson_body,
    publish,
)

DOWN = psycopg.OperationalError("connection refused: is the server running?")


def outage_worker(container, js, name: str, job: Job, outage: Outage) -> Worker:
    return Worker(
        name=name,
        js=js,
        job=job,
        owner=DlqOwners.parse(
            f"{name}=team-mail", consumers=[name], event_types=["LessonScheduled"]
        ).for_consumer(name),
        failures=FirstFailures(container.engine),
        concurrency=4,
        outage=outage,
    )


async def queued(js, name: str, n: int) -> set[str]:
    """`n` events on a durable of their own; their event ids."""
    await ensure_worker_consumer(js, name, LESSON_SUBJECT, ack_wait=30)
    ours = set()
    for _ in range(n):
        body = lesson_body(uuid4())
        ours.add(body["event_id"])
        await publish(js, encoded(body))
    return ours


def test_a_message_that_keeps_meeting_our_outage_is_dead_lettered_with_why(
    container, migrated
) -> None:
    _, nats_url = migrated
    name = f"outage-{uuid4().hex[:6]}"
    calls: list[float] = []

    async def job(envelope, _replayed):
        if str(envelope.event_id) not in ours:
            return  # other tests' lessons
        calls.append(time.monotonic())
        raise DOWN

    async def body(js, _nc):
        nonlocal ours
        ours = await queued(js, name, 1)
        outage = Outage(
            attempts=4,
            retry=BackoffPolicy(first=0.1, cap=0.4, jitter=Jitter.NONE),
        )
        async with working(outage_worker(container, js, name, job, outage)):
            for _ in range(100):
                entries = [e async for e in dead_letters(js, name)]
                if entries:
                    return entries
                await asyncio.sleep(0.1)
        raise AssertionError("never dead-lettered")

    ours: set[str] = set()
    [entry] = run(with_js(nats_url, body))
    assert json.loads(entry.data)["event_id"] in ours
    assert entry.reason.startswith("our side failed on 4 deliveries: OperationalError")
    assert entry.owner == "team-mail"
    assert entry.deliveries == 4
    assert len(calls) == 4
    # The waits between deliveries grew: 0.1, 0.2, 0.4 (capped), each at least.
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert all(g >= want * 0.9 for g, want in zip(gaps, (0.1, 0.2, 0.4), strict=True))


def test_during_an_outage_one_slot_probes_then_every_message_is_handled_once(
    container, migrated
) -> None:
    """40 queued, 4 slots, our database down for 2 s: the first wave tries one
    message a slot, then the slots rest (0.2 s, then 0.4 s) and one of them at a
    time tries again — without that, each wave would cycle four messages through
    a failure, and without any rest the 40 would fail at once, over and over.
    Once it is back, each of the 40 is done once."""
    _, nats_url = migrated
    name = f"outage-{uuid4().hex[:6]}"
    down = True
    tried: list[str] = []
    done: list[str] = []

    async def job(envelope, _replayed):
        event_id = str(envelope.event_id)
        if event_id not in ours:
            return None
        tried.append(event_id)
        if down:
            raise DOWN
        done.append(event_id)
        return Done()

    async def body(js, _nc):
        nonlocal ours, down
        ours = await queued(js, name, 40)
        outage = Outage(
            attempts=100,
            retry=BackoffPolicy(first=0.2, cap=0.4, jitter=Jitter.NONE),
        )
        async with working(outage_worker(container, js, name, job, outage)):
            await asyncio.sleep(2.0)
            tried_while_down = len(tried)
            down = False
            for _ in range(200):
                if len(set(done)) == len(ours):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # nothing more arrives after the last
        return tried_while_down

    ours: set[str] = set()
    tried_while_down = run(with_js(nats_url, body))
    # 4 in the first wave, then one a rest: at most 2.0 / 0.2 rests.
    assert 1 <= tried_while_down <= 4 + 10, tried_while_down
    assert sorted(done) == sorted(ours)  # each once: acked after it was done


def test_one_message_failing_alone_holds_the_others_up_for_one_short_rest(
    container, migrated
) -> None:
    """A message whose own statement times out is transient to PostgreSQL: it is
    retried with its own growing delay (1, 2, 4 s), but the slots' rest after each
    of its failures starts afresh, since other jobs got through in between — the
    e-mails arriving meanwhile wait at most one first rest (1 s), not 2, then 4."""
    _, nats_url = migrated
    name = f"outage-{uuid4().hex[:6]}"
    failed: list[float] = []
    done: dict[str, float] = {}

    async def job(envelope, _replayed):
        event_id = str(envelope.event_id)
        if event_id == poison:
            failed.append(time.monotonic())
            raise psycopg.errors.QueryCanceled("canceling statement: timeout")
        if event_id in ours:
            done.setdefault(event_id, time.monotonic())
            return Done()
        return None

    async def body(js, _nc):
        nonlocal poison, ours
        [poison] = await queued(js, name, 1)
        outage = Outage(
            attempts=4,
            retry=BackoffPolicy(first=1.0, cap=8.0, jitter=Jitter.NONE),
        )
        async with working(outage_worker(container, js, name, job, outage)):
            for _ in range(80):  # ten a second while the poison fails
                body = lesson_body(uuid4())
                ours.add(body["event_id"])
                await publish(js, encoded(body))
                await asyncio.sleep(0.1)
            for _ in range(100):
                if len(done) == len(ours) and len(failed) == 4:
                    break
                await asyncio.sleep(0.1)

    poison, ours = "", set()
    run(with_js(nats_url, body))
    assert len(failed) == 4  # 1, 2 and 4 s apart, then the DLQ
    assert sorted(done) == sorted(ours)
    finished = sorted(done.values())
    assert max(b - a for a, b in itertools.pairwise(finished)) < 1.6


def test_a_stop_during_an_outage_waits_for_one_turn_not_for_every_slot(
    container, migrated
) -> None:
    """Our side failed once and nothing has written since, so the slots take turns,
    each pulling for up to its fetch_timeout (1 s) on an empty stream. A stop
    waits for the one turn under way; the four queued behind it used to take
    theirs first (about 4 s)."""
    _, nats_url = migrated
    name = f"outage-{uuid4().hex[:6]}"
    failed = False

    async def job(envelope, _replayed):
        nonlocal failed
        if str(envelope.event_id) not in ours or failed:
            return  # asks nothing of our side: the outage is not seen to end
        failed = True
        raise DOWN

    async def body(js, _nc):
        nonlocal ours
        ours = await queued(js, name, 1)
        outage = Outage(
            attempts=100,
            retry=BackoffPolicy(first=0.1, cap=0.1, jitter=Jitter.NONE),
        )
        worker = outage_worker(container, js, name, job, outage)
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        await asyncio.sleep(2.0)  # the message failed, came back, was acked
        stop.set()
        started = time.monotonic()
        await asyncio.wait_for(running, 10)
        return time.monotonic() - started

    ours: set[str] = set()
    took = run(with_js(nats_url, body))
    assert failed
    assert took < 2.0, took  # one turn's fetch (1 s) and its message, not five


def test_a_replay_is_fresh_on_its_first_delivery_only(container, migrated) -> None:
    """The job hears "replayed" once: a redelivery of the replayed message (a
    retry here; a lost term or a crash alike) goes on from where it stood."""
    _, nats_url = migrated
    name = f"replay-{uuid4().hex[:6]}"
    heard: list[bool] = []

    async def job(envelope, replayed):
        if str(envelope.event_id) != event_id:
            return None
        heard.append(replayed)
        return Retry(delay=0.1, reason="503") if len(heard) == 1 else Done()

    async def body(js, _nc):
        await ensure_worker_consumer(js, name, LESSON_SUBJECT, ack_wait=30)
        await js.publish(
            replay_subject(name, LESSON_SUBJECT),
            encoded(lesson),
            stream=REPLAY_STREAM,
            headers={REPLAY_HEADER: "7", "Club-Original-Subject": LESSON_SUBJECT},
        )
        outage = Outage(
            attempts=10,
            retry=BackoffPolicy(first=0.1, cap=0.1, jitter=Jitter.FULL),
        )
        async with working(outage_worker(container, js, name, job, outage)):
            for _ in range(100):
                if len(heard) == 2:
                    break
                await asyncio.sleep(0.05)

    lesson = lesson_body(uuid4())
    event_id = lesson["event_id"]
    run(with_js(nats_url, body))
    assert heard == [True, False]


def test_deliveries_of_an_outage_do_not_count_toward_the_poison_bound(
    container, migrated
) -> None:
    """Delivered six times while our side was down, then met by a bug once: its
    first poison failure of five allowed, so it is retried and done, not
    dead-lettered for the deliveries JetStream counted meanwhile."""
    _, nats_url = migrated
    name = f"outage-{uuid4().hex[:6]}"
    tries: list[str] = []

    async def job(envelope, _replayed):
        if str(envelope.event_id) not in ours:
            return None
        tries.append("down" if len(tries) < 6 else "bug" if len(tries) == 6 else "done")
        if tries[-1] == "down":
            raise DOWN
        if tries[-1] == "bug":
            raise RuntimeError("a bug this message meets once")
        return Done()

    async def body(js, _nc):
        nonlocal ours
        ours = await queued(js, name, 1)
        outage = Outage(
            attempts=100,
            retry=BackoffPolicy(first=0.05, cap=0.1, jitter=Jitter.NONE),
        )
        async with working(outage_worker(container, js, name, job, outage)):
            for _ in range(100):
                if tries[-1:] == ["done"]:
                    break
                await asyncio.sleep(0.1)
        return [e async for e in dead_letters(js, name)]

    ours: set[str] = set()
    entries = run(with_js(nats_url, body))
    assert tries == ["down"] * 6 + ["bug", "done"]
    assert entries == []
