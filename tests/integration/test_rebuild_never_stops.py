"""A rebuild skips and records a poison event, and its switch never queues readers
behind a long transaction: it retries with a lock_timeout instead."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest
import sqlalchemy as sa
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from adapters.postgres.rebuild import Rebuild, RebuildSwitchError
from adapters.postgres.skips import list_skips
from domain.lesson import Lesson
from projections import statistics
from tests.integration.helpers import lesson_with_enrollments

LOCK_TIMEOUT_S = 0.3


def rebuild_of_statistics(container, **kw) -> Rebuild:
    return Rebuild(
        engine=container.engine, recorder=container.app.recorder,
        mapper=container.app.mapper, name=statistics.NAME,
        metadata=statistics.metadata, apply=statistics.apply, **kw,
    )  # fmt: skip


def store_lesson_bypassing_the_domain(container, title: str) -> UUID:
    """An event the domain would refuse today, as older code may have stored it."""
    lesson_id = uuid4()
    scheduled = Lesson.Scheduled(
        originator_id=lesson_id, originator_version=1,
        timestamp=datetime.now(UTC), originator_topic=get_topic(Lesson),
        title=title, capacity=3, starts_at=datetime(2026, 12, 1, tzinfo=UTC),
        price_cents=0, teacher_id=None,
    )  # fmt: skip
    app = container.app
    app.recorder.insert_events([app.mapper.to_stored_event(scheduled)])
    return lesson_id


def confirmed(container, lesson_id: UUID) -> int | None:
    with container.engine.connect() as conn:
        return conn.execute(
            sa.select(statistics.lessons.c.confirmed).where(
                statistics.lessons.c.lesson_id == lesson_id
            )
        ).scalar_one_or_none()


def test_a_rebuild_skips_and_records_a_poison_event_and_goes_on(container) -> None:
    before = lesson_with_enrollments(container, 2)
    poison = store_lesson_bypassing_the_domain(container, "Yo\u0000ga")
    after = lesson_with_enrollments(container, 1)

    report = rebuild_of_statistics(container).run()

    [skipped] = report.skipped
    assert skipped.reason.startswith("DataError: PostgreSQL text fields cannot")
    assert list_skips(container.engine, statistics.NAME) == [skipped]
    assert confirmed(container, before) == 2
    assert confirmed(container, after) == 1
    assert confirmed(container, poison) is None


def lock_waits(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return conn.exec_driver_sql(
            "SELECT count(*) FROM pg_locks WHERE NOT granted"
        ).scalar_one()


def read_seconds(engine: sa.Engine) -> float:
    """How long one reader of the live table waits (5 s at most, then it fails)."""
    started = time.monotonic()
    with engine.begin() as conn:
        conn.exec_driver_sql("SET LOCAL statement_timeout = '5s'")
        conn.execute(sa.select(sa.func.count()).select_from(statistics.lessons))
    return time.monotonic() - started


def test_a_long_reader_makes_the_switch_retry_not_queue_other_readers(
    container,
) -> None:
    lesson = lesson_with_enrollments(container, 2)
    rebuild = rebuild_of_statistics(container, switch_lock_timeout=LOCK_TIMEOUT_S)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            rebuild.run()
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    worker = threading.Thread(target=run)
    with container.engine.connect() as reader:
        transaction = reader.begin()  # a long report holding the live table
        reader.execute(sa.select(statistics.lessons))
        try:
            worker.start()
            deadline = time.monotonic() + 30
            while not lock_waits(container.engine):  # the switch met the reader
                assert time.monotonic() < deadline, "the switch never waited"
                time.sleep(0.01)
            waits = [read_seconds(container.engine) for _ in range(10)]
        finally:
            transaction.commit()
    worker.join(30)

    assert max(waits) < LOCK_TIMEOUT_S + 0.7, waits
    assert not worker.is_alive()
    assert errors == []
    assert rebuild.switch_retries >= 1
    assert confirmed(container, lesson) == 2  # switched once the reader ended


def test_a_switch_that_never_gets_its_locks_gives_up_with_a_clear_error(
    container,
) -> None:
    lesson = lesson_with_enrollments(container, 1)
    rebuild = rebuild_of_statistics(
        container, switch_lock_timeout=0.05, switch_attempts=2
    )
    with container.engine.connect() as reader, reader.begin():
        reader.execute(sa.select(statistics.lessons))
        with pytest.raises(RebuildSwitchError, match="long transaction"):
            rebuild.run()
    assert confirmed(container, lesson) is None  # the live tables, untouched


def test_a_stored_event_that_cannot_be_mapped_is_skipped_too(container) -> None:
    """A stored state the mapper cannot read: skipped by notification id."""
    app = container.app
    corrupt = StoredEvent(
        originator_id=uuid4(), originator_version=1,
        topic=get_topic(Lesson.Scheduled), state=b"{not json",
    )  # fmt: skip
    app.recorder.insert_events([corrupt])
    notification_id = app.recorder.max_notification_id()
    after = lesson_with_enrollments(container, 1)

    report = rebuild_of_statistics(container).run()

    [skipped] = [s for s in report.skipped if s.notification_id == notification_id]
    assert skipped.event_id is None
    assert skipped in list_skips(container.engine, statistics.NAME)
    assert confirmed(container, after) == 1
