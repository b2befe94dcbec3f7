"""A broker set to take less than an event is a setting to fix, not the event's
fault: the relay waits as through an outage and says what to change; nothing is
dead-lettered or skipped, and once the setting is raised every event goes out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from adapters.embedded.nats import EmbeddedNats
from adapters.nats.batch_publish import MessageTooLargeError
from adapters.nats.dlq import dead_letters
from adapters.nats.relay import Relay
from domain.lesson import MAX_TITLE_LENGTH
from entrypoints.cli.demo import schedule_lesson
from entrypoints.runtime.bootstrap import Container
from tests.integration.helpers import (
    lesson_with_enrollments,
    make_relay,
    published,
    relay_all,
    run,
    stream_messages,
    with_js,
)
from tests.stack import scratch_for

# Above the JetStream API's own requests (creating the streams), below an event
# whose title is as long as a title may be (200 characters of 4 bytes each).
SMALL_MAX_PAYLOAD = 1024
LONGEST_TITLE = "\N{VIOLIN}" * MAX_TITLE_LENGTH


@pytest.fixture(scope="module")
def nats(request: pytest.FixtureRequest) -> Iterator[tuple[str, EmbeddedNats]]:
    """This module's broker, configured below the size of Club's events."""
    server = EmbeddedNats(
        scratch_for(request, "nats"), sync_always=False, max_payload=SMALL_MAX_PAYLOAD
    )
    server.start()
    yield server.url, server
    server.stop()


def test_an_event_over_the_brokers_max_payload_waits_with_the_fix_named(
    container: Container,
    migrated: tuple[str, str],
    nats: tuple[str, EmbeddedNats],
) -> None:
    database_url, nats_url = migrated
    schedule_lesson(container.app, capacity=1, title=LONGEST_TITLE)
    lesson_with_enrollments(container, 2)
    newest = container.app.recorder.max_notification_id()

    async def refused(js: JetStreamContext, nc: Client) -> tuple[int, str, int, int]:
        relay = make_relay(container, nc, database_url)
        with pytest.raises(MessageTooLargeError) as too_large:
            await relay.relay_once()
        entries = [e async for e in dead_letters(js, "relay")]
        position = relay.position
        await relay.release()
        return (
            position,
            str(too_large.value),
            len(entries),
            len(await stream_messages(js)),
        )

    position, said, dead, stored = run(with_js(nats_url, refused))
    assert position == 0  # nothing skipped
    assert f"the broker takes at most {SMALL_MAX_PAYLOAD}" in said
    assert "raise max_payload in the NATS server's configuration" in said
    assert (dead, stored) == (0, 0)

    # The operator raises the setting; the same relay's lease, the same log.
    _, server = nats
    server.stop()
    server.max_payload = None
    server.start(port=server.port)

    async def resumed(js: JetStreamContext, nc: Client) -> tuple[int, int]:
        relay: Relay = make_relay(container, nc, database_url)
        await relay_all(relay)
        position = relay.position
        await relay.release()
        return position, len(await stream_messages(js))

    position, stored = run(with_js(nats_url, resumed))
    assert position == newest
    assert stored == len(published(container))
