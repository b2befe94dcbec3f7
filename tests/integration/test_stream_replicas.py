"""Asking a single NATS server for replicated streams is a setting to fix, said so."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

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
from tests.stack import club_env


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


@pytest.fixture(scope="module")
def single() -> Iterator[EmbeddedNats]:
    """A server of our own: CLUB_NATS_URL may name a cluster, where 3 would work."""
    server = EmbeddedNats(scratch_dir("club-test-replicas-"), sync_always=False)
    server.start()
    yield server
    server.stop()


def test_three_replicas_on_one_server_are_refused_with_the_fix_named(
    single: EmbeddedNats,
) -> None:
    with pytest.raises(ReplicasRefusedError) as refused:
        asyncio.run(_ensure(single.url, 3))
    assert f"unset {REPLICAS_VARIABLE} or set it to 1" in str(refused.value)
    assert "non-clustered" in str(refused.value)  # the server's own words
    assert asyncio.run(_replicas(single.url)) is None  # nothing half made
    asyncio.run(_ensure(single.url, None))
    assert asyncio.run(_replicas(single.url)) == 1
    with pytest.raises(ReplicasRefusedError):  # an update is refused alike
        asyncio.run(_ensure(single.url, 3))
    assert asyncio.run(_replicas(single.url)) == 1


@pytest.mark.parametrize(
    ("replicas", "answer"),
    [
        ("three", "CLUB_NATS_REPLICAS='three' must be a whole number from 1 to 5"),
        ("3", "on a single server unset CLUB_NATS_REPLICAS or set it to 1"),
    ],
)
def test_club_migrate_says_what_to_fix_and_exits_2(
    single: EmbeddedNats, database_url: str, replicas: str, answer: str
) -> None:
    env = club_env(database_url, single.url, CLUB_NATS_REPLICAS=replicas)
    migrate = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "migrate"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert migrate.returncode == 2, migrate.stderr
    assert answer in migrate.stderr
    assert "Traceback" not in migrate.stderr
