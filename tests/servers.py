"""Real servers for the tests: the ones in CLUB_* URLs, or private embedded ones."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import psycopg
from nats.js.errors import NotFoundError

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM, connect


def scratch_dir(prefix: str) -> Path:
    """A temp dir that the embedded PostgreSQL (run as nobody under root) can reach;
    removed when the test process exits, so runs do not fill the disk."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    if not os.environ.get("CLUB_KEEP_SCRATCH"):  # keep logs to read after a failure
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


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
def fresh_database(server_url: str) -> Iterator[str]:
    name = f"club_test_{uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(server_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
