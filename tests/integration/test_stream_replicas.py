"""Asking a single NATS server for replicated streams is a setting to fix, said so."""

from __future__ import annotations

import asyncio

import pytest
from nats.js.errors import NotFoundError

from adapters.embedded.nats import EmbeddedNats
from adapters.nats.streams import (
    EVENTS_STREAM,
    REPLICAS_VARIABLE,
    ReplicasRefusedError,
    connect,
    ensure_streams,
)
from tests.servers import scratch_dir


async def _ensure(url: str, replicas: int | None) -> None:
    nc = await connect(url, name="test-replicas")
    try:
        await ensure_streams(nc.jetstream(), replicas)
    finally:
        await nc.close()


async def _replicas(url: str) -> int | None:
    """The events stream's replica count; None when there is no stream."""
    nc = await connect(url, name="test-replicas")
    try:
        info = await nc.jetstream().stream_info(EVENTS_STREAM)
    except NotFoundError:
        return None
    finally:
        await nc.close()
    return info.config.num_replicas


def test_three_replicas_on_one_server_are_refused_with_the_fix_named() -> None:
    server = EmbeddedNats(scratch_dir("club-test-replicas-"), sync_always=False)
    server.start()
    try:
        with pytest.raises(ReplicasRefusedError) as refused:
            asyncio.run(_ensure(server.url, 3))
        assert f"unset {REPLICAS_VARIABLE} or set it to 1" in str(refused.value)
        assert "non-clustered" in str(refused.value)  # the server's own words
        assert asyncio.run(_replicas(server.url)) is None  # nothing half made
        asyncio.run(_ensure(server.url, None))
        assert asyncio.run(_replicas(server.url)) == 1
        with pytest.raises(ReplicasRefusedError):  # an update is refused alike
            asyncio.run(_ensure(server.url, 3))
        assert asyncio.run(_replicas(server.url)) == 1
    finally:
        server.stop()
