"""Each role as a long-running process: API, relay, projector."""

from __future__ import annotations

import asyncio
import signal

import structlog
import uvicorn

from adapters.nats.consumer import ConsumerRunner
from adapters.nats.relay import Relay
from adapters.nats.streams import connect
from entrypoints import bootstrap
from entrypoints.http import create_app

log = structlog.get_logger()


def run_api(database_url: str, nats_url: str, host: str, port: int) -> None:
    container = bootstrap.build(database_url, pool_size=20)
    try:
        uvicorn.run(
            create_app(container, nats_url),
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
    finally:
        container.close()


def run_relay(database_url: str, nats_url: str) -> None:
    asyncio.run(_relay(database_url, nats_url))


def run_projector(database_url: str, nats_url: str, name: str) -> None:
    asyncio.run(_projector(database_url, nats_url, name))


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def _relay(database_url: str, nats_url: str) -> None:
    stop = _stop_on_signals()
    container = bootstrap.build(database_url, pool_size=2)
    nc = await connect(nats_url, name="club-relay")
    try:
        relay = Relay(
            recorder=container.app.recorder,
            mapper=container.app.mapper,
            engine=container.engine,
            js=nc.jetstream(),
            listen_dsn=database_url,
        )
        log.info("relay.started", position="loading")
        await relay.run(stop)
    finally:
        await nc.close()
        container.close()


async def _projector(database_url: str, nats_url: str, name: str) -> None:
    stop = _stop_on_signals()
    _, apply = bootstrap.PROJECTIONS[name]
    container = bootstrap.build(database_url, pool_size=2)
    nc = await connect(nats_url, name=f"club-projector-{name}")
    try:
        runner = ConsumerRunner(
            name=name, apply=apply, js=nc.jetstream(), engine=container.engine
        )
        log.info("projector.started", projection=name)
        await runner.run(stop)
    finally:
        await nc.close()
        container.close()
