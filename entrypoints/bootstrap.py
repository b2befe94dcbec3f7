"""The only composition root: settings in, wired objects out. No import-time work."""

from __future__ import annotations

import asyncio
from uuid import UUID

import attrs
import sqlalchemy as sa
from nats.js import JetStreamContext

from adapters.nats.dlq import ensure_replay_consumer
from adapters.nats.streams import connect, ensure_consumer, ensure_streams
from adapters.nats.worker import Job, ensure_worker_consumer
from adapters.postgres import tables
from adapters.postgres.answers import SqlAnswerStore
from adapters.postgres.database import create_engine, eventsourcing_env
from adapters.postgres.factory import STATEMENT_TIMEOUT
from adapters.postgres.inbox import Apply
from adapters.postgres.notifications import SqlNotificationStore
from adapters.postgres.students import SqlStudentDirectory
from application.club import ClubApplication
from application.contracts.envelope import Envelope
from application.email import EmailProvider
from application.notifications import (
    LessonFacts,
    Notifier,
    Outcome,
    RetryPolicy,
    request_for,
)
from projections import rosters, statistics

MIGRATION_LOCK = 0x0C1B  # pg advisory lock key: one migrator at a time

# Projection name -> (its tables, its apply function) for the consumer runner.
PROJECTIONS: dict[str, tuple[sa.MetaData, Apply]] = {
    rosters.NAME: (rosters.metadata, rosters.apply),
    statistics.NAME: (statistics.metadata, statistics.apply),
}


@attrs.define
class Container:
    app: ClubApplication
    engine: sa.Engine
    students: SqlStudentDirectory
    notifications: SqlNotificationStore

    def close(self) -> None:
        self.app.close()
        self.engine.dispose()


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
    return Container(
        app=app,
        engine=engine,
        students=students,
        notifications=SqlNotificationStore(engine),
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
            for metadata, _ in PROJECTIONS.values():
                metadata.create_all(conn)
    finally:
        engine.dispose()


async def migrate_broker(js: JetStreamContext) -> None:
    await ensure_streams(js)
    for name in PROJECTIONS:
        await ensure_consumer(js, name)
        await ensure_replay_consumer(js, name)
    await ensure_worker_consumer(js, NOTIFICATIONS, NOTIFICATION_SUBJECTS)


# The urgent work class: one notification per enrollment event.
NOTIFICATIONS = "notifications"
NOTIFICATION_SUBJECTS = "club.events.enrollment.>"


def notification_job(
    container: Container, provider: EmailProvider, policy: RetryPolicy | None = None
) -> Job:
    """The notifications worker's job: the event in, the recorded outcome out."""

    def lesson_facts(lesson_id: UUID) -> LessonFacts:
        lesson = container.app.get_lesson(lesson_id)
        return LessonFacts(title=lesson.title, starts_at=lesson.starts_at)

    notifier = Notifier(
        store=container.notifications,
        provider=provider,
        students=container.students,
        lessons=lesson_facts,
        policy=policy,
    )

    async def job(envelope: Envelope, replayed: bool) -> Outcome | None:
        request = request_for(envelope, replayed=replayed)
        if request is None:
            return None  # an enrollment event that asks for no e-mail
        return await asyncio.to_thread(notifier.handle, request)

    return job


def migrate(database_url: str, nats_url: str) -> None:
    """Everything `club migrate` creates: tables, streams, consumers."""
    migrate_database(database_url)

    async def broker() -> None:
        nc = await connect(nats_url, name="club-migrate")
        try:
            await migrate_broker(nc.jetstream())
        finally:
            await nc.close()

    asyncio.run(broker())
