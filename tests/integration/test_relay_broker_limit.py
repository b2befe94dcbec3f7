"""A broker set to take less than an event is a setting to fix, not the event's
fault: the relay waits as through an outage and says what to change; nothing is
dead-lettered or skipped, and once the setting is raised — by a reload, which a
connected client is not told of — every event goes out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, MutableMapping
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from nats.aio.client import Client
from nats.js import JetStreamContext
from structlog.testing import capture_logs

from adapters.embedded.nats import EmbeddedNats
from adapters.nats.dlq import dead_letters
from adapters.nats.relay import Relay
from adapters.nats.streams import EVENTS_STREAM, connect
from application.console_reads import DeadLetter
from application.contracts.mapping import published_envelopes
from domain.lesson import MAX_TITLE_LENGTH
from entrypoints.cli.demo import schedule_lesson
from entrypoints.runtime.bootstrap import Container
from tests.integration.helpers import (
    lesson_with_enrollments,
    make_relay,
    run,
    with_js,
)
from tests.stack import scratch_for

# Above the JetStream API's own requests (creating the streams), below an event
# whose title is as long as a title may be (200 characters of 4 bytes each).
SMALL_MAX_PAYLOAD = 1024
LONGEST_TITLE = "\N{VIOLIN}" * MAX_TITLE_LENGTH
REFUSALS = 2  # the relay's loop met the limit and came round to it again


@pytest.fixture(scope="module")
def nats(request: pytest.FixtureRequest) -> Iterator[tuple[str, EmbeddedNats]]:
    """This module's broker, configured below the size of Club's events."""
    server = EmbeddedNats(
        scratch_for(request, "nats"), sync_always=False, max_payload=SMALL_MAX_PAYLOAD
    )
    server.start()
    yield server.url, server
    server.stop()


def test_an_event_over_the_brokers_max_payload_waits_until_it_is_raised(
    container: Container,
    migrated: tuple[str, str],
    nats: tuple[str, EmbeddedNats],
) -> None:
    database_url, nats_url = migrated
    _, server = nats
    server.max_payload = SMALL_MAX_PAYLOAD  # whatever this module's other test left
    server.reload()
    first = (container.app.recorder.max_notification_id() or 0) + 1
    schedule_lesson(container.app, capacity=1, title=LONGEST_TITLE)
    lesson_with_enrollments(container, 2)
    newest = container.app.recorder.max_notification_id()
    ours = container.app.recorder.select_notifications(start=first, limit=100)
    owed = len(published_envelopes(container.app.mapper, ours))

    async def body(js: JetStreamContext, _: Client) -> tuple[list[str], int, int]:
        # The relay on a connection of its own: it reconnects after each refusal,
        # which would cut the test's own requests on a shared one.
        relays = await connect(nats_url, name="test-relay")
        try:
            return await watched(js, make_relay(container, relays, database_url))
        finally:
            await relays.close()

    async def watched(js: JetStreamContext, relay: Relay) -> tuple[list[str], int, int]:
        assert await relay.try_acquire()
        before, dead_before = relay.position, await _dead_letters(js)
        stored_before = (await js.stream_info(EVENTS_STREAM)).state.messages
        stop = asyncio.Event()
        with capture_logs() as logs:
            loop = asyncio.create_task(relay.run(stop))
            refusals = await _until_refused(logs, REFUSALS)
            assert relay.position == before  # nothing skipped
            assert await _dead_letters(js) == dead_before  # nothing dead-lettered
            stored = (await js.stream_info(EVENTS_STREAM)).state.messages
            assert stored == stored_before
            server.max_payload = None  # the operator raises it: NATS's default
            server.reload()
            await _until_stored(js, stored_before + owed)
            stop.set()
            await loop
        await relay.release()
        return refusals, relay.position, await _dead_letters(js) - dead_before

    refusals, position, dead = run(with_js(nats_url, body))
    for said in refusals:
        assert f"the broker takes at most {SMALL_MAX_PAYLOAD}" in said
        assert "raise max_payload in the NATS server's configuration" in said
        assert "Nats-Msg-Id" in said
    assert position == newest
    assert dead == 0


async def _dead_letters(js: JetStreamContext) -> int:
    return len([e async for e in dead_letters(js, "relay")])


async def _until_refused(logs: list[MutableMapping[str, Any]], times: int) -> list[str]:
    deadline = time.monotonic() + 30
    while True:
        said = [
            str(e["error"]) for e in logs if e["event"] == "relay.message_too_large"
        ]
        if len(said) >= times:
            return said
        assert time.monotonic() < deadline, f"the relay said {logs}"
        await asyncio.sleep(0.05)


async def _until_stored(js: JetStreamContext, expected: int) -> None:
    """Within the relay's longest backoff (5 s) and a reconnect, with room."""
    deadline = time.monotonic() + 30
    while (await js.stream_info(EVENTS_STREAM)).state.messages < expected:
        assert time.monotonic() < deadline, "the raised limit was never learned"
        await asyncio.sleep(0.1)


def test_an_unmappable_event_too_large_to_carry_is_dead_lettered_without_it(
    container: Container,
    migrated: tuple[str, str],
    nats: tuple[str, EmbeddedNats],
) -> None:
    """Its dead letter would be refused like the event: the entry goes without the
    body, naming where the event store keeps it, and the outbox goes on."""
    database_url, nats_url = migrated
    _, server = nats
    server.max_payload = SMALL_MAX_PAYLOAD
    server.reload()  # this test's connection is new: it is told the small limit
    garbled = StoredEvent(
        originator_id=uuid4(),
        originator_version=1,
        topic="domain.enrollment:Enrollment.Confirmed",  # published, but unreadable
        state=b"\x00" * (2 * SMALL_MAX_PAYLOAD),
    )
    [bad_id] = container.app.recorder.insert_events([garbled]) or []

    async def body(js: JetStreamContext, nc: Client) -> tuple[int, list[DeadLetter]]:
        relay = make_relay(container, nc, database_url)
        while await relay.relay_once():
            pass
        await relay.release()
        return relay.position, [e async for e in dead_letters(js, "relay")]

    position, entries = run(with_js(nats_url, body))
    assert position == bad_id  # moved past it: the outbox goes on
    [entry] = [e for e in entries if e.original_seq == bad_id]
    assert entry.reason.startswith("unmappable:")
    assert entry.headers["Club-Body-Omitted"] == (
        f"{2 * SMALL_MAX_PAYLOAD} bytes: too large for the broker; the stored event "
        f"is notification {bad_id}"
    )
    assert entry.data == b""
