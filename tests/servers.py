"""Real servers for the tests: the ones in CLUB_* URLs, or private embedded ones."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager

from nats.js.errors import NotFoundError

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.scratch import fresh_database, scratch_dir
from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM, connect

__all__ = ["fresh_database", "nats_server", "postgres_server", "scratch_dir"]


@contextmanager
def postgres_server() -> Iterator[str]:
    url = os.environ.get("CLUB_DATABASE_URL")
    if url:
        yield url
        return
    pg = EmbeddedPostgres(scratch_dir("club-test-pg-") / "pg", durable=False)
    try:
        yield pg.start()
    finally:
        pg.stop()


@contextmanager
def nats_server() -> Iterator[tuple[str, EmbeddedNats | None]]:
    """A private server per test module; a shared one is emptied first."""
    url = os.environ.get("CLUB_NATS_URL")
    if url:
        asyncio.run(_delete_streams(url))
        yield url, None
        return
    server = EmbeddedNats(scratch_dir("club-test-nats-"), sync_always=False)
    try:
        yield server.start(), server
    finally:
        server.stop()


async def _delete_streams(url: str) -> None:
    nc = await connect(url, name="club-test-reset")
    try:
        js = nc.jetstream()
        for stream in (EVENTS_STREAM, DLQ_STREAM):
            with contextlib.suppress(NotFoundError):  # absent is what we want
                await js.delete_stream(stream)
    finally:
        await nc.close()
