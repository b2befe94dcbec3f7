"""Each role as a long-running process: API, relay, projector."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from typing import Any

import structlog
import uvicorn
from nats.aio.client import Client

from adapters.nats.consumer import ConsumerRunner
from adapters.nats.relay import Relay
from adapters.nats.streams import connect
from adapters.transient import TRANSIENT, Backoff
from entrypoints import bootstrap
from entrypoints.http import create_app
from entrypoints.settings import Settings

log = structlog.get_logger()


def run_api(settings: Settings) -> None:
    database_url, nats_url = settings.require_services()
    container = _build_when_reachable(
        database_url,
        pool_size=20,
    )
    assert container is not None  # noqa: S101 - only a stop check returns None
    try:
        uvicorn.run(
            create_app(
                container,
                nats_url,
                deadline_seconds=settings.request_deadline_seconds,
            ),
            host=settings.http_host,
            port=settings.http_port,
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
    finally:
        container.close()


def run_relay(settings: Settings) -> None:
    asyncio.run(_relay(settings))


def run_projector(settings: Settings, name: str) -> None:
    asyncio.run(_projector(settings, name))


def _build_when_reachable(
    database_url: str, stopped: Callable[[], bool] = lambda: False, **kw: Any
) -> bootstrap.Container | None:
    """Roles start in any order: one whose database is down waits for it instead of
    dying at start-up (a supervisor would restart it, a bare process would not).
    None: asked to stop while waiting."""
    backoff = Backoff(cap=2.0)
    while not stopped():
        try:
            return bootstrap.build(database_url, **kw)
        except TRANSIENT as e:
            log.warning("role.waiting_for_database", error=repr(e))
            time.sleep(backoff.next_delay())
    return None


async def _connect_when_reachable(
    nats_url: str, name: str, stop: asyncio.Event
) -> Client | None:
    """The same for NATS. None: asked to stop while waiting — the client itself
    retries an unreachable broker for ever, so the stop must interrupt it."""
    backoff = Backoff(cap=2.0)
    while not stop.is_set():
        connecting = asyncio.ensure_future(connect(nats_url, name=name))
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait(
                {connecting, stopped}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopped.cancel()
        if not connecting.done():
            connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await connecting
            return None
        try:
            return connecting.result()
        except TRANSIENT as e:
            log.warning("role.waiting_for_nats", error=repr(e))
            await backoff.wait()
    return None


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def _relay(settings: Settings) -> None:
    database_url, nats_url = settings.require_services()
    stop = _stop_on_signals()
    # A relay paused inside a lease transaction must not block the takeover.
    container = await asyncio.to_thread(
        _build_when_reachable,
        database_url,
        stop.is_set,
        pool_size=2,
        hold_locks_at_most=settings.relay_lease_seconds / 2,
    )
    if container is None:
        return
    nc = await _connect_when_reachable(nats_url, "club-relay", stop)
    if nc is None:
        container.close()
        return
    try:
        relay = Relay(
            recorder=container.app.recorder,
            mapper=container.app.mapper,
            engine=container.engine,
            js=nc.jetstream(),
            listen_dsn=database_url,
            lease_seconds=settings.relay_lease_seconds,
        )
        log.info("relay.started", owner=relay.lease.owner)
        await relay.run(stop)
    finally:
        await nc.close()
        container.close()


async def _projector(settings: Settings, name: str) -> None:
    database_url, nats_url = settings.require_services()
    stop = _stop_on_signals()
    _, apply = bootstrap.PROJECTIONS[name]
    container = await asyncio.to_thread(
        _build_when_reachable, database_url, stop.is_set, pool_size=2
    )
    if container is None:
        return
    nc = await _connect_when_reachable(nats_url, f"club-projector-{name}", stop)
    if nc is None:
        container.close()
        return
    try:
        runner = ConsumerRunner(
            name=name,
            apply=apply,
            js=nc.jetstream(),
            engine=container.engine,
            ack_wait=settings.ack_wait_seconds,
        )
        log.info("projector.started", projection=name)
        await runner.run(stop)
    finally:
        await nc.close()
        container.close()
