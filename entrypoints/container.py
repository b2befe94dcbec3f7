"""The objects every role shares: the application, the engine, the stores."""

from __future__ import annotations

import attrs
import sqlalchemy as sa

from adapters.postgres.answers import SqlAnswerStore
from adapters.postgres.database import create_engine, eventsourcing_env
from adapters.postgres.notifications import SqlNotificationStore
from adapters.postgres.students import SqlStudentDirectory
from application.club import ClubApplication


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
