"""The PostgreSQL adapters keep the ports' contracts (each test on a clean table)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from uuid import UUID

import pytest
import sqlalchemy as sa

from adapters.postgres.answers import SqlAnswerStore
from adapters.postgres.inbox import (
    Applied,
    Apply,
    Delivery,
    apply_batch,
    apply_isolated,
)
from adapters.postgres.notifications import SqlNotificationStore
from adapters.postgres.recorder import ClubRecorder
from adapters.postgres.students import SqlStudentDirectory
from adapters.postgres.tables import (
    consumer_positions,
    notifications,
    request_answers,
    students,
)
from application.contracts.envelope import Envelope
from entrypoints.runtime.bootstrap import Container
from tests.ports.answer_store import AnswerStoreContract
from tests.ports.enrollment_lookups import EnrollmentLookupsContract, Stores
from tests.ports.inbox import EffectFailedError, InboxContract
from tests.ports.notification_store import NotificationStoreContract
from tests.ports.student_directory import StudentDirectoryContract


def _emptied(engine: sa.Engine, table: sa.Table) -> sa.Engine:
    with engine.begin() as conn:
        conn.execute(sa.delete(table))
    return engine


class TestSqlStudentDirectory(StudentDirectoryContract):
    @pytest.fixture
    def directory(self, container) -> SqlStudentDirectory:
        return SqlStudentDirectory(_emptied(container.engine, students))


class TestSqlAnswerStore(AnswerStoreContract):
    @pytest.fixture
    def store(self, container) -> SqlAnswerStore:
        return SqlAnswerStore(_emptied(container.engine, request_answers))


class TestClubRecorderLookups(EnrollmentLookupsContract):
    """The event store's recorder answers both reads on its own connections."""

    @pytest.fixture
    def stores(self, container) -> Stores:
        engine = _emptied(_emptied(container.engine, students), request_answers)
        recorder = container.app.recorder
        assert isinstance(recorder, ClubRecorder)
        assert container.app.lookups is recorder  # as the API is built
        return Stores(recorder, SqlAnswerStore(engine), SqlStudentDirectory(engine))


class TestSqlNotificationStore(NotificationStoreContract):
    @pytest.fixture
    def store(self, container) -> SqlNotificationStore:
        return SqlNotificationStore(_emptied(container.engine, notifications))


class SqlInbox:
    """The harness on PostgreSQL: the effect writes to a table of its own."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def apply(
        self,
        consumer: str,
        batch: Sequence[Delivery],
        *,
        position: int = 0,
        fail: bool = False,
    ) -> Applied:
        with self._engine.begin() as conn:
            return apply_batch(
                conn, consumer, batch, self._effect(consumer, fail), position
            )

    def isolated(
        self, consumer: str, batch: Sequence[Delivery], poison: UUID
    ) -> Applied:
        def effect(conn: sa.Connection, envelopes: Sequence[Envelope]) -> None:
            self._effect(consumer, False)(conn, envelopes)
            if any(e.event_id == poison for e in envelopes):
                raise EffectFailedError(str(poison))

        with self._engine.begin() as conn:
            return apply_isolated(conn, consumer, batch, effect)

    def _effect(self, consumer: str, fail: bool) -> Apply:
        def effect(conn: sa.Connection, envelopes: Sequence[Envelope]) -> None:
            conn.execute(
                sa.insert(_effects),
                [{"consumer": consumer, "event_id": e.event_id} for e in envelopes],
            )
            if fail:
                raise EffectFailedError(consumer)

        return effect

    def effects(self, consumer: str) -> list[UUID]:
        with self._engine.connect() as conn:
            return list(
                conn.execute(
                    sa.select(_effects.c.event_id)
                    .where(_effects.c.consumer == consumer)
                    .order_by(_effects.c.n)
                ).scalars()
            )

    def position(self, consumer: str) -> int | None:
        with self._engine.connect() as conn:
            return conn.execute(
                sa.select(consumer_positions.c.stream_seq).where(
                    consumer_positions.c.consumer == consumer
                )
            ).scalar()


_effects = sa.Table(
    "inbox_contract_effects",
    sa.MetaData(),
    sa.Column("n", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("consumer", sa.Text, nullable=False),
    sa.Column("event_id", sa.Uuid, nullable=False),
)


class TestSqlInbox(InboxContract):
    @pytest.fixture
    def inbox(self, container: Container) -> Iterator[SqlInbox]:
        _effects.create(container.engine, checkfirst=True)
        yield SqlInbox(container.engine)
        _effects.drop(container.engine)
