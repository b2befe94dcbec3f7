"""A relay at the log's end waits for the event store's NOTIFY instead of reading
again, and never sleeps through a commit its last read did not see."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from nats.js import JetStreamContext

from adapters.nats.relay import Relay
from adapters.nats.streams import EVENTS_STREAM
from entrypoints.cli.demo import enroll_all, register_students, schedule_lesson
from tests.integration.helpers import (
    lesson_with_enrollments,
    make_relay,
    published,
    relay_all,
    run,
    with_js,
)

# Far longer than any test here may take: an event found only by the idle poll fails.
SLOW_POLL = {"idle_poll": 60.0, "lease_seconds": 300.0}


def test_a_batch_that_reaches_the_end_says_so(container, migrated) -> None:
    database_url, nats_url = migrated
    lesson_with_enrollments(container, 3)

    async def body(js, nc):
        relay = make_relay(container, nc, database_url, batch_size=2, **SLOW_POLL)
        seen = []
        while await relay.relay_once():
            seen.append(relay.caught_up)
        await relay.release()  # the next test's relay needs the lease
        return seen

    seen = run(with_js(nats_url, body))
    # Stretches of 2 rows: only the last one, shorter or at the end, is caught up.
    assert seen[-1] is True
    assert not any(seen[:-1])


def test_events_committed_while_it_publishes_are_relayed_at_once(
    container, migrated
) -> None:
    """Commits land at random moments of the relay's cycle (read, publish, acks,
    prefetch, the move of the position): each must reach the stream through its
    NOTIFY, none through the 60 s poll."""
    database_url, nats_url = migrated
    rng = random.Random(7)

    async def body(js, nc):
        relay = make_relay(container, nc, database_url, batch_size=2, **SLOW_POLL)
        async with running(relay):
            for _ in range(40):
                await asyncio.to_thread(lesson_with_enrollments, container, 1)
                await asyncio.sleep(rng.uniform(0, 0.02))
            await every_event_on_the_stream(js, container)
        return relay.position

    position = run(with_js(nats_url, body))
    assert position == container.app.recorder.max_notification_id()


def test_a_commit_during_the_prefetch_is_not_slept_through(
    container, migrated, monkeypatch
) -> None:
    """The next batch is read while the last one's acks arrive, before the loop
    turns: a NOTIFY heard then, for a commit that read missed, keeps it reading."""
    database_url, nats_url = migrated
    before = len(published(container))
    lesson_with_enrollments(container, 1)
    lesson_with_enrollments(container, 1)
    assert len(published(container)) - before > 3  # one full batch, then a prefetch
    late_lesson = schedule_lesson(container.app, capacity=1)  # not published
    [late_student] = register_students(container.students, 1)

    async def body(js, nc):
        relay = make_relay(container, nc, database_url, batch_size=3, **SLOW_POLL)
        read, advance = relay._read, relay.lease.advance
        committed, prefetched = threading.Event(), threading.Event()

        def read_then_commit(after: int):
            batch = read(after)
            prefetch = after != relay.position
            if prefetch and batch.at_end and not committed.is_set():
                relay._woken.clear()  # the listener's first news is in
                enroll_all(container.app, late_lesson, [late_student])  # one commit
                committed.set()
                until(relay._woken.is_set)
            if prefetch:
                prefetched.set()
            return batch

        def advance_after_the_prefetch(epoch: int, position: int) -> None:
            if relay._next is not None:  # the turn ends after the NOTIFY is heard
                prefetched.wait(5)
                prefetched.clear()
            advance(epoch, position)

        monkeypatch.setattr(relay, "_read", read_then_commit)
        monkeypatch.setattr(relay.lease, "advance", advance_after_the_prefetch)
        async with running(relay):
            await asyncio.to_thread(committed.wait, 5)
            assert committed.is_set(), "the relay never prefetched at the log's end"
            await every_event_on_the_stream(js, container)

    run(with_js(nats_url, body))


@asynccontextmanager
async def running(relay: Relay) -> AsyncIterator[None]:
    """The relay's own loop, stopped and its lease released on the way out."""
    stop = asyncio.Event()
    loop = asyncio.create_task(relay.run(stop))
    try:
        yield
    finally:
        stop.set()
        await loop
        await relay.release()  # the next test's relay needs the lease


async def every_event_on_the_stream(js: JetStreamContext, container) -> None:
    """Within 5 s: an event left for the 60 s poll fails the test."""
    expected = len(published(container))
    deadline = time.monotonic() + 5
    while (await js.stream_info(EVENTS_STREAM)).state.messages < expected:
        assert time.monotonic() < deadline, "an event waited for the poll"
        await asyncio.sleep(0.02)


def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the relay's listener heard nothing"
        time.sleep(0.005)


def test_draining_still_reaches_the_end(container, migrated) -> None:
    """relay_all reads until a read finds nothing, whatever `caught_up` says."""
    database_url, nats_url = migrated
    lesson_with_enrollments(container, 2)

    async def body(js, nc):
        relay = make_relay(container, nc, database_url, batch_size=3)
        await relay_all(relay)
        await relay.release()
        return (await js.stream_info(EVENTS_STREAM)).state.messages

    assert run(with_js(nats_url, body)) == len(published(container))
