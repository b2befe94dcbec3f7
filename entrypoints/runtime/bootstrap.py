"""The only composition root: settings in, wired objects out. No import-time work.

Every role is built here — `build_api`, `build_relay`, `build_projector(name)`,
`build_worker(name)`, `build_rebuild(name)` — from `Settings` and a `Container`, and
each takes its dependencies as overridable arguments (a test hands in its own), the
way cosmicpython's `bootstrap(...)` does. `ROLES` is the one list of roles: `club up`
starts it, the broker's users are made for it, the CLI names its choices from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from typing import Any, Protocol

import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from starlette.types import ASGIApp

from adapters.identity.tokens import IssuerKeys, Keys, SharedSecret, TokenVerifier
from adapters.nats.consumer import ConsumerRunner
from adapters.nats.dlq import ensure_replay_consumer
from adapters.nats.relay import Relay
from adapters.nats.streams import (
    StreamRetention,
    connect,
    ensure_consumer,
    ensure_streams,
)
from adapters.nats.worker import Worker, ensure_worker_consumer
from adapters.postgres import tables
from adapters.postgres.answers import SqlAnswerStore
from adapters.postgres.database import create_engine, eventsourcing_env
from adapters.postgres.deadlines import SagaDeadlines
from adapters.postgres.factory import STATEMENT_TIMEOUT
from adapters.postgres.first_failures import add_poison_failures
from adapters.postgres.notifications import SqlNotificationStore
from adapters.postgres.rebuild import Rebuild
from adapters.postgres.recorder import ClubRecorder
from adapters.postgres.replays import SqlReplayAudits
from adapters.postgres.retention import PostgresTrim, create_retention_indexes
from adapters.postgres.role_beats import RoleBeats
from adapters.postgres.saga_feed import SagaFeed
from adapters.postgres.students import SqlStudentDirectory
from adapters.postgres.webhooks import WebhookLog
from adapters.providers.metered import MeteredEmailProvider, MeteredPaymentProvider
from adapters.providers.payment_crash import CrashPointProvider
from adapters.providers.payment_http import HttpPaymentProvider
from adapters.trim_process import TrimProcess
from application.club import ClubApplication
from application.dlq_owners import RELAY_DLQ
from application.ports import EmailProvider, PaymentProvider
from application.saga_runner import PurchaseSaga
from entrypoints.config.catalogue import (
    CONSUMERS,
    PROJECTIONS,
    ROLES,
    WORK_CLASSES,
    Role,
)
from entrypoints.config.container import Container
from entrypoints.config.settings import ConfigError, Settings, exports_dir
from entrypoints.runtime.console_wiring import (
    chain_counts,
    confirmed_counts,
    console_reads,
    dead_letter_queue,
    work_lists,
)
from entrypoints.runtime.heartbeat import heartbeat
from entrypoints.runtime.metrics_server import API_HIDES, MetricsServer
from entrypoints.runtime.provider_urls import email_provider
from entrypoints.runtime.work_classes import WIRING, WorkDeps

# Re-exported: every caller builds through here, and names roles from here.
__all__ = [
    "CONSUMERS",
    "PROJECTIONS",
    "ROLES",
    "Container",
    "Role",
    "build",
    "chain_counts",
    "confirmed_counts",
    "console_reads",
    "dead_letter_queue",
    "work_lists",
]

MIGRATION_LOCK = 0x0C1B  # pg advisory lock key: one migrator at a time


def build(
    database_url: str,
    *,
    pool_size: int = 10,
    hold_locks_at_most: float | None = None,
    event_store_env: dict[str, str] | None = None,
) -> Container:
    """`event_store_env` replaces the event store's settings (a test's proxied
    connection, a benchmark's recorder); everything else follows `database_url`."""
    engine = create_engine(
        database_url, pool_size=pool_size, hold_locks_at_most=hold_locks_at_most
    )
    students = SqlStudentDirectory(engine)
    app = ClubApplication(
        env=event_store_env or eventsourcing_env(database_url),
        students=students,
        answers=SqlAnswerStore(engine),
    )
    if isinstance(app.recorder, ClubRecorder):  # else the two reads, one by one
        app.lookups = app.recorder  # on the event store's connections: one pool
    # Only nudges: it never claims, so its lease is never used.
    deadlines = SagaDeadlines(engine, owner="nudge-only", lease=1.0)
    return Container(
        app=app,
        engine=engine,
        students=students,
        notifications=SqlNotificationStore(engine),
        deadlines=deadlines,
        webhooks=WebhookLog(engine, deadlines),
        replays=SqlReplayAudits(engine),
    )


def migrate_database(database_url: str) -> None:
    """Create the event store and every SQL table; safe to run again, or at once."""
    engine = create_engine(database_url, pool_size=1, statement_timeout=None)
    try:
        with engine.begin() as conn:
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK)))
            env = eventsourcing_env(database_url) | {
                "CREATE_TABLE": "y",
                STATEMENT_TIMEOUT: "0",  # creating tables is not a hot path
            }
            ClubApplication(env=env).close()
            # Claims of the old three-transaction key handling; answers now live in
            # request_answers, and the enrollment's request id still recognises a
            # retry of a request answered before the upgrade.
            conn.execute(sa.text("DROP TABLE IF EXISTS idempotency_keys"))
            tables.metadata.create_all(conn)
            add_poison_failures(conn)
            create_retention_indexes(conn)
            for metadata, _ in PROJECTIONS.values():
                metadata.create_all(conn)
    finally:
        engine.dispose()


async def migrate_broker(
    js: JetStreamContext, streams: StreamRetention | None = None
) -> None:
    """`streams`: each stream's max_age (None: a stream keeps the one it has)."""
    await ensure_streams(js, retention=streams)
    for name in PROJECTIONS:
        await ensure_consumer(js, name)
        await ensure_replay_consumer(js, name)
    for work in WORK_CLASSES.values():
        await ensure_worker_consumer(js, work.name, work.subjects)


def migrate(
    database_url: str, nats_url: str, streams: StreamRetention | None = None
) -> None:
    """Everything `club migrate` creates: tables, streams, consumers."""
    migrate_database(database_url)

    async def broker() -> None:
        nc = await connect(nats_url, name="club-migrate")
        try:
            await migrate_broker(nc.jetstream(), streams)
        finally:
            await nc.close()

    asyncio.run(broker())


class Runnable(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


def build_api(settings: Settings, container: Container) -> ASGIApp:
    from entrypoints.http.rate_limit import CallerLimit  # noqa: PLC0415 - likewise
    from entrypoints.ops.access import OpsConfig  # noqa: PLC0415 - likewise
    from entrypoints.runtime.api import create_app  # noqa: PLC0415 - FastAPI only for the API

    return create_app(
        container,
        settings.nats_url,
        deadline_seconds=settings.request_deadline_seconds,
        data_dir=settings.data_dir,
        hold_seconds=settings.hold_seconds,
        webhook_secret=settings.payment_webhook_secret,
        ops=OpsConfig.from_settings(settings),
        verifier=token_verifier(settings),
        rate_limit=CallerLimit(settings.rate_limit),
        allowed_hosts=settings.allowed_hosts,
        metrics=api_metrics(settings),
        beat=lambda _api: beating(container, Role("api")),
    )


def beating(
    container: Container, role: Role
) -> contextlib.AbstractAsyncContextManager[None]:
    """The role says it is alive while the block runs: a beat every few seconds
    in `role_beats`, read by `club status` and /ops (runtime/heartbeat.py)."""
    return heartbeat(RoleBeats(container.engine), role)


def api_metrics(settings: Settings) -> MetricsServer | None:
    """The API's /metrics on its own port (CLUB_METRICS_PORT), never the public
    one; its workers share it. Started with the app, on its loop."""
    if not settings.metrics_port:
        return None
    return MetricsServer(
        settings.metrics_host, settings.metrics_port, API_HIDES, shared=True
    )


def token_verifier(settings: Settings) -> TokenVerifier:
    """The API knows every caller (contract §4.1): it does not start without a
    way to verify tokens."""
    auth = settings.auth
    if not auth.configured:
        msg = (
            "set CLUB_AUTH_SECRET (at least 32 bytes; HS256 tokens, `club token` "
            "signs them) or CLUB_AUTH_JWKS_URL (your identity provider's keys); "
            "`club up` makes a secret in CLUB_DATA_DIR"
        )
        raise ConfigError(msg)
    keys: Keys = (
        IssuerKeys(auth.jwks_url)
        if auth.jwks_url
        else SharedSecret(auth.secret.encode())
    )
    return TokenVerifier(keys=keys, audience=auth.audience, issuer=auth.issuer or None)


def saga_deadlines(settings: Settings, container: Container) -> SagaDeadlines:
    """Claims name the process that holds them (an operator reads `claimed_by`)."""
    return SagaDeadlines(
        container.engine,
        owner=f"{socket.gethostname()}:{os.getpid()}",
        lease=settings.saga_lease_seconds,
    )


def build_saga(
    settings: Settings,
    container: Container,
    *,
    provider: PaymentProvider | None = None,
) -> Runnable:
    from adapters.saga_process import SagaProcess  # noqa: PLC0415 - saga role only

    deadlines = saga_deadlines(settings, container)
    http = provider or HttpPaymentProvider(settings.payment_provider_url)
    saga = PurchaseSaga(
        purchases=container.app,
        provider=CrashPointProvider(MeteredPaymentProvider(http)),
        policy=settings.saga_policy,
    )
    return SagaProcess(
        saga=saga,
        deadlines=deadlines,
        feed=SagaFeed(container.engine, container.app.recorder, deadlines),
        poll_seconds=settings.saga_poll_seconds,
    )


def build_relay(
    settings: Settings, container: Container, nc: Client, **tuning: Any
) -> Relay:
    """`tuning` overrides the relay's keywords (a test's PubAck timeout, a bench's
    lease name), so tests and benchmarks build the relay the role runs."""
    database_url, _ = settings.require_services()
    return Relay(
        recorder=container.app.recorder,
        mapper=container.app.mapper,
        engine=container.engine,
        nc=nc,
        listen_dsn=database_url,
        dead_letter_owner=settings.dlq_owners.owner(RELAY_DLQ),
        **({"lease_seconds": settings.relay_lease_seconds} | tuning),
    )


def build_projector(
    settings: Settings, container: Container, nc: Client, *, name: str
) -> ConsumerRunner:
    _, apply = PROJECTIONS[name]
    return ConsumerRunner(
        name=name,
        apply=apply,
        js=nc.jetstream(),
        engine=container.engine,
        owner=settings.dlq_owners.for_consumer(name),
        ack_wait=settings.ack_wait_seconds,
    )


def build_worker(
    settings: Settings,
    container: Container,
    nc: Client,
    *,
    name: str,
    email: EmailProvider | None = None,
) -> Worker:
    work = WIRING[name]
    deps = WorkDeps(
        settings=settings,
        container=container,
        email=MeteredEmailProvider(email or email_provider(settings)),
    )
    js = nc.jetstream()
    return work.worker(deps, js, work.job(deps), settings.dlq_owners.for_consumer(name))


def build_trim(settings: Settings, container: Container) -> TrimProcess:
    retention = settings.retention
    return TrimProcess(
        database=PostgresTrim(
            container.engine, inbox_s=retention.inbox_s, answers_s=retention.answers_s
        ),
        exports_dir=exports_dir(settings.data_dir),
        exports_s=retention.exports_s,
    )


def build_rebuild(container: Container, name: str) -> Rebuild:
    metadata, apply = PROJECTIONS[name]
    return Rebuild(
        engine=container.engine,
        recorder=container.app.recorder,
        mapper=container.app.mapper,
        name=name,
        metadata=metadata,
        apply=apply,
    )


# What each role's container needs: the relay's sessions must not hold the lease
# row past half a lease if the process pauses; the API serves many requests at once.
def container_options(settings: Settings, role: Role) -> dict[str, Any]:
    if role.kind == "relay":
        return {"pool_size": 2, "hold_locks_at_most": settings.relay_lease_seconds / 2}
    if role.kind == "api":
        return {"pool_size": 20}
    if role.kind == "saga":
        return {"pool_size": 4}
    if role.kind == "worker" and role.name in WORK_CLASSES:
        # A connection per slot, the replay's slot and the first-failure record:
        # slots waiting for a connection are slots in name only.
        return {"pool_size": WORK_CLASSES[role.name].slots + 2}
    return {"pool_size": 2 if role.kind == "projector" else 4}


def threads(role: Role) -> int:
    """The role's default executor: every worker slot's blocking call at once
    (asyncio's default, cores + 4, is six on two cores, fewer than eight slots),
    plus the role's own housekeeping."""
    if role.kind == "worker" and role.name in WORK_CLASSES:
        return WORK_CLASSES[role.name].slots + 4
    return min(32, (os.cpu_count() or 1) + 4)  # asyncio's own default
