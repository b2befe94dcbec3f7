"""Each role as a long-running process, built by `bootstrap`: API, relay, projector,
worker. This module only waits for the servers, runs the role and stops it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import structlog
import uvicorn
from nats.aio.client import Client
from nats.js import JetStreamContext

from adapters.nats.relay import Relay
from adapters.nats.streams import connect
from adapters.stop_signals import stop_on_signals
from adapters.transient import TRANSIENT, Backoff
from entrypoints.config.container import Container
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.runtime import bootstrap, role_metrics
from entrypoints.runtime.api_workers import api_workers
from entrypoints.runtime.head_deadline import HEAD_DEADLINE_PROTOCOL
from entrypoints.runtime.metrics_server import MetricsServer, Refresh, serve_metrics
from entrypoints.runtime.role_loop import run_on_role_loop
from entrypoints.runtime.startup_heap import freeze_startup_heap

log = structlog.get_logger()


# What one API process holds for clients it does not know: at most this many
# connections and requests at once (then 503 at once, not a queue that grows), an
# idle kept-alive connection for 5 s, and a request's head for 10 s
# (head_deadline.py; docs/decisions/2026-12-01-callers-and-their-rights.md).
MOST_AT_ONCE = 512


def exposure(settings: Settings) -> dict[str, Any]:
    """uvicorn's options facing clients. X-Forwarded-For/-Proto are believed only
    from CLUB_TRUSTED_PROXIES (uvicorn believes 127.0.0.1 by default: any local
    process could then name its own client address)."""
    trusted = settings.trusted_proxies
    return {
        "limit_concurrency": MOST_AT_ONCE,
        "timeout_keep_alive": 5,
        "http": HEAD_DEADLINE_PROTOCOL,
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or None,
    }


def run_api(settings: Settings, workers: int | None = None) -> None:
    """`workers` processes (None: CLUB_API_WORKERS, else 1). Several share one port;
    each runs `entrypoints.runtime.asgi:create_app` with its own container, and the
    event store's version check keeps their writes to one lesson serialised."""
    count = api_workers(os.environ) if workers is None else workers
    if count > 1:
        uvicorn.run(
            "entrypoints.runtime.asgi:create_app",
            factory=True,
            workers=count,
            host=settings.http_host,
            port=settings.http_port,
            log_level="warning",
            log_config=None,  # uvicorn's loggers go through ours (logging_setup.py)
            timeout_graceful_shutdown=5,
            **exposure(settings),
        )
        return
    role = bootstrap.Role("api")
    database_url, _ = settings.require_services()
    container = _build_when_reachable(
        database_url, **bootstrap.container_options(settings, role)
    )
    assert container is not None  # noqa: S101 - only a stop check returns None
    try:
        app = bootstrap.build_api(settings, container)
        freeze_startup_heap()
        uvicorn.run(
            app,
            host=settings.http_host,
            port=settings.http_port,
            log_level="warning",
            log_config=None,
            timeout_graceful_shutdown=5,
            **exposure(settings),
        )
    finally:
        container.close()


def run_relay(settings: Settings) -> None:
    serve = partial(_serve, settings, bootstrap.Role("relay"), bootstrap.build_relay)
    run_on_role_loop(_until_signalled(serve))


def run_projector(settings: Settings, name: str) -> None:
    build = partial(bootstrap.build_projector, name=name)
    role = bootstrap.Role("projector", name)
    run_on_role_loop(_until_signalled(partial(_serve, settings, role, build)))


def run_worker(settings: Settings, name: str) -> None:
    build = partial(bootstrap.build_worker, name=name)
    role = bootstrap.Role("worker", name)
    run_on_role_loop(_until_signalled(partial(_serve, settings, role, build)))


def run_saga(settings: Settings) -> None:
    run_on_role_loop(_until_signalled(partial(_serve_saga, settings)))


async def _until_signalled(serve: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Runs a role's main coroutine until the first SIGINT or SIGTERM."""
    with stop_on_signals() as stop:
        await serve(stop)


async def _serve_saga(settings: Settings, stop: asyncio.Event) -> None:
    """The saga needs the database and the payment provider, not the broker."""
    database_url, _ = settings.require_services()
    role = bootstrap.Role("saga")
    metrics = await serve_metrics(settings, role)
    try:
        container = await asyncio.to_thread(
            _build_when_reachable,
            database_url,
            stop.is_set,
            **bootstrap.container_options(settings, role),
        )
        if container is None:
            return
        try:
            runnable = bootstrap.build_saga(settings, container)
            if metrics is not None:
                metrics.refresh = role_metrics.saga_refresh(container)
            freeze_startup_heap()
            log.info("role.started", role="saga")
            async with bootstrap.beating(container, role):
                await runnable.run(stop)
        finally:
            container.close()
    finally:
        await _close(metrics)


def run_trim(settings: Settings, *, once: bool = False) -> None:
    """Retention needs the database (and the export files' directory), not the
    broker. `once`: one pass and exit, for cron; else a pass every few minutes."""
    database_url = settings.database_url
    if database_url is None:
        msg = "set CLUB_DATABASE_URL for `club trim`, or run `club up`"
        raise ConfigError(msg)
    role = bootstrap.Role("trim")
    if not once:
        serve = partial(_serve_trim, settings, database_url, role)
        run_on_role_loop(_until_signalled(serve))
        return
    container = bootstrap.build(
        database_url, **bootstrap.container_options(settings, role)
    )
    try:
        report = bootstrap.build_trim(settings, container).once()
    finally:
        container.close()
    rows, files = report.rows, report.files
    busy = " (another trim held the lock: rows next time)" if rows.skipped else ""
    print(  # noqa: T201 - the command's answer
        f"club: trimmed {rows.inbox} inbox rows, {rows.answers} stored answers, "
        f"{files.files} export files ({files.bytes} bytes){busy}"
    )


async def _serve_trim(
    settings: Settings, database_url: str, role: bootstrap.Role, stop: asyncio.Event
) -> None:
    container = await asyncio.to_thread(
        _build_when_reachable,
        database_url,
        stop.is_set,
        **bootstrap.container_options(settings, role),
    )
    if container is None:
        return
    try:
        log.info("role.started", role="trim")
        async with bootstrap.beating(container, role):
            await bootstrap.build_trim(settings, container).run(stop)
    finally:
        container.close()


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


async def _serve(
    settings: Settings,
    role: bootstrap.Role,
    build: Callable[[Settings, Container, Client], bootstrap.Runnable],
    stop: asyncio.Event,
) -> None:
    """Wait for the database and the broker, build the role, run it until a stop.
    Its /metrics answers from the start: a role still waiting is alive."""
    database_url, nats_url = settings.require_services()
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=bootstrap.threads(role))
    )
    metrics = await serve_metrics(settings, role)
    try:
        container = await asyncio.to_thread(
            _build_when_reachable,
            database_url,
            stop.is_set,
            **bootstrap.container_options(settings, role),
        )
        if container is None:
            return
        name = f"club-{'-'.join(role.argv)}"
        nc = await _connect_when_reachable(nats_url, name, stop)
        if nc is None:
            container.close()
            return
        try:
            runnable = build(settings, container, nc)
            if metrics is not None:
                metrics.refresh = _own_hop(role, container, nc.jetstream(), runnable)
            freeze_startup_heap()
            log.info("role.started", role=" ".join(role.argv))
            async with bootstrap.beating(container, role):
                await _run_until_stopped(runnable, stop)
        finally:
            await nc.close()
            container.close()
    finally:
        await _close(metrics)


def _own_hop(
    role: bootstrap.Role,
    container: Container,
    js: JetStreamContext,
    runnable: bootstrap.Runnable,
) -> Refresh:
    """What this role reads about its own hop at each scrape."""
    if isinstance(runnable, Relay):
        return role_metrics.relay_refresh(container, runnable)
    return role_metrics.consumer_refresh(
        container, js, role.name, projection=role.kind == "projector"
    )


async def _close(metrics: MetricsServer | None) -> None:
    if metrics is not None:
        await metrics.close()


async def _run_until_stopped(runnable: bootstrap.Runnable, stop: asyncio.Event) -> None:
    """A passing failure that escapes the role's own loop — a durable made at start
    while the broker elects a leader times out — is waited out, not fatal."""
    backoff = Backoff(cap=5.0)
    while not stop.is_set():
        try:
            await runnable.run(stop)
        except TRANSIENT as e:
            log.warning("role.retry", error=repr(e))
            await backoff.wait()
