"""A stored event the relay cannot map never stops the outbox."""

from __future__ import annotations

from uuid import uuid4

from eventsourcing.persistence import StoredEvent

from adapters.nats.dlq import dead_letters
from entrypoints.config.settings import Settings
from entrypoints.runtime.bootstrap import build_relay
from tests.integration.helpers import (
    UNUSED_NATS_URL,
    lesson_with_enrollments,
    run,
    stream_messages,
    with_js,
)


def test_an_unmappable_stored_event_is_dead_lettered_and_the_rest_published(
    container, migrated
) -> None:
    database_url, nats_url = migrated
    lesson_with_enrollments(container, 1)
    garbled = StoredEvent(
        originator_id=uuid4(),
        originator_version=1,
        topic="domain.enrollment:Enrollment.Confirmed",  # published, but unreadable
        state=b"\x00 not what this version can decode",
    )
    [bad_id] = container.app.recorder.insert_events([garbled]) or []
    lesson_with_enrollments(container, 1)
    newest = container.app.recorder.max_notification_id()

    settings = Settings.from_env(
        {
            "CLUB_DATABASE_URL": database_url,
            "CLUB_NATS_URL": UNUSED_NATS_URL,
            "CLUB_DLQ_OWNERS": "relay=team-contracts,*=club-operators",
        }
    )

    async def body(js, nc):
        relay = build_relay(settings, container, nc)
        while await relay.relay_once():
            pass
        assert relay.position == newest  # moved past it: the outbox goes on
        entries = [e async for e in dead_letters(js, "relay")]
        messages = await stream_messages(js)
        await relay.release()
        return entries, messages

    entries, messages = run(with_js(nats_url, body))
    [entry] = entries
    assert entry.original_seq == bad_id
    assert entry.reason.startswith("unmappable:")
    assert entry.owner == "team-contracts"  # CLUB_DLQ_OWNERS' rule for the relay
    assert (
        entry.headers["Club-Recovery"]
        == f"fix the mapping, then club relay rewind --to {bad_id}"
    )
    types = [m.headers["Club-Event-Type"] for m in messages]
    assert types.count("EnrollmentConfirmed") == 2  # both good ones published
