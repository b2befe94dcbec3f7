"""The streams' max_age comes from the retention settings, on creation and after."""

from __future__ import annotations

import asyncio

from adapters.nats.streams import (
    DLQ_STREAM,
    EVENTS_STREAM,
    REPLAY_STREAM,
    StreamRetention,
    connect,
    ensure_streams,
)
from entrypoints.config.settings import Settings, stream_retention
from entrypoints.runtime import bootstrap

STREAMS = (EVENTS_STREAM, DLQ_STREAM, REPLAY_STREAM)


async def _ensure_then_read(
    url: str, retention: StreamRetention | None
) -> dict[str, float]:
    nc = await connect(url, name="test-retention")
    try:
        js = nc.jetstream()
        await ensure_streams(js, retention=retention)
        return {
            name: (await js.stream_info(name)).config.max_age or 0.0 for name in STREAMS
        }
    finally:
        await nc.close()


def test_max_age_is_set_kept_and_updated(nats_url: str) -> None:
    chosen = stream_retention(
        Settings.from_env(
            {"CLUB_STREAM_RETENTION": "2d", "CLUB_DLQ_RETENTION": "3d"}
        ).retention
    )
    made = asyncio.run(_ensure_then_read(nats_url, chosen))
    assert made == {
        EVENTS_STREAM: 2 * 86_400,
        DLQ_STREAM: 3 * 86_400,
        REPLAY_STREAM: 3 * 86_400,
    }
    # A process that does not say (a test, a bench) changes nothing.
    assert asyncio.run(_ensure_then_read(nats_url, None)) == made
    # `club migrate` with other settings updates the existing streams.
    shorter = StreamRetention(events_s=3_600, dead_letters_s=7_200)
    updated = asyncio.run(_ensure_then_read(nats_url, shorter))
    assert updated == {
        EVENTS_STREAM: 3_600,
        DLQ_STREAM: 7_200,
        REPLAY_STREAM: 7_200,
    }


def test_migrate_applies_the_settings_retention(database_url, nats_url) -> None:
    retention = Settings.from_env({}).retention
    bootstrap.migrate(database_url, nats_url, stream_retention(retention))
    found = asyncio.run(_ensure_then_read(nats_url, None))
    assert found[EVENTS_STREAM] == retention.stream_s
    assert found[DLQ_STREAM] == found[REPLAY_STREAM] == retention.dead_letters_s
