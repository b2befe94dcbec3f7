"""Shared steps for tests that drive the relay and consumers against real servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from nats.aio.client import Client
from nats.js import JetStreamContext
from prometheus_client import generate_latest

from adapters.nats.relay import Relay
from adapters.nats.relay_drain import relay_all
from adapters.nats.streams import EVENTS_STREAM, connect, ensure_consumer
from adapters.nats.worker import Job, RateLimit, Worker
from adapters.postgres.first_failures import FirstFailures
from adapters.postgres.tables import notifications
from application.contracts.envelope import Envelope
from application.contracts.mapping import published_envelopes
from application.dlq_owners import DlqOwners
from entrypoints.cli.demo import lesson_with_enrollments
from entrypoints.config.settings import Settings, exports_dir
from entrypoints.http.problems import install_error_handlers
from entrypoints.http.routes import operations
from entrypoints.ops.metrics import refresh_api_metrics
from entrypoints.runtime import work_classes
from entrypoints.runtime.bootstrap import Container, build_relay
from tests.identity import ADMIN, VERIFIER

# One copy: the package's, re-exported for the tests that import them from here.
__all__ = ["lesson_with_enrollments", "make_relay", "published", "relay_all"]

T = TypeVar("T")
# build_relay publishes on the connection it is handed and reads only the database
# URL from its settings; the NATS URL is there because a role's settings always have
# one.
UNUSED_NATS_URL = "nats://127.0.0.1:4222"


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


async def with_js(
    url: str, body: Callable[[JetStreamContext, Client], Awaitable[T]]
) -> T:
    nc = await connect(url, name="club-test")
    try:
        return await body(nc.jetstream(), nc)
    finally:
        await nc.close()


def make_relay(container: Container, nc: Client, url: str, **tuning: Any) -> Relay:
    """The relay as the role builds it, on the test's database and connection."""
    settings = Settings.from_env(
        {"CLUB_DATABASE_URL": url, "CLUB_NATS_URL": UNUSED_NATS_URL}
    )
    return build_relay(settings, container, nc, **tuning)


def worker_for(
    container: Container,
    js: JetStreamContext,
    job: Job,
    *,
    name: str = work_classes.NOTIFICATIONS,
    owners: DlqOwners | None = None,
    concurrency: int = 4,
    rate: RateLimit | None = None,
) -> Worker:
    """A worker on the test's connection: the notifications durable unless another
    is named, its dead letters' owner by `owners` (the default rules unless given)."""
    return Worker(
        name=name,
        js=js,
        job=job,
        owner=(owners or DlqOwners()).for_consumer(name),
        failures=FirstFailures(container.engine),
        concurrency=concurrency,
        rate=rate,
    )


@asynccontextmanager
async def working(worker: Worker) -> AsyncIterator[None]:
    """The worker runs in a task of this event loop until the block ends."""
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)


@contextmanager
def operations_api(container: Container, data_dir: Path) -> Iterator[TestClient]:
    """The API's /operations routes on the test's container and export files."""
    app = FastAPI()
    app.include_router(operations.router)
    app.state.container = container
    app.state.exports_dir = exports_dir(data_dir)
    app.state.verifier = VERIFIER
    install_error_handlers(app)
    with TestClient(app, headers=ADMIN) as client:
        yield client


def published(container: Container) -> list[Envelope]:
    """Every event in the store as the relay publishes it (the truth to compare)."""
    notifications = container.app.recorder.select_notifications(start=1, limit=10**7)
    return published_envelopes(container.app.mapper, notifications)


def email_states(container: Container) -> dict[str, int]:
    """How many notification rows (e-mails owed or done) are in each state."""
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(notifications.c.state, sa.func.count()).group_by(
                notifications.c.state
            )
        )
        return dict(rows.all())


def email_states_of(container: Container, enrollment_id: object) -> list[str]:
    """The states of one enrollment's notification rows, one per e-mail it owes."""
    with container.engine.connect() as conn:
        return sorted(
            conn.execute(
                sa.select(notifications.c.state).where(
                    notifications.c.enrollment_id == enrollment_id
                )
            ).scalars()
        )


async def bound_consumer(js: JetStreamContext, name: str, **config: Any) -> Any:
    """The durable `name` on CLUB_EVENTS (made with `config` if new), bound to pull."""
    await ensure_consumer(js, name, **config)
    return await js.pull_subscribe_bind(durable=name, stream=EVENTS_STREAM)


async def stream_messages(js: JetStreamContext) -> list[Any]:
    info = await js.stream_info(EVENTS_STREAM)
    first, last = info.state.first_seq, info.state.last_seq
    if info.state.messages == 0:
        return []
    return [await js.get_msg(EVENTS_STREAM, seq) for seq in range(first, last + 1)]


def scrape(client: TestClient) -> str:
    """What the API process's metrics port answers, from a test's client: the
    gauges read at scrape time, then the registry's text."""
    app = client.app
    while not isinstance(app, FastAPI):  # under the outer ASGI layers
        app = app.app  # type: ignore[attr-defined]
    client.portal.call(refresh_api_metrics, app.state)  # type: ignore[union-attr]
    return generate_latest().decode()
