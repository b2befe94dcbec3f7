"""Retention on real PostgreSQL and NATS: what is past its store's retention goes, in
bounded batches, and nothing newer; a consumer never applies again an event whose
inbox row was trimmed; an export whose file was trimmed answers 410 Gone."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import sqlalchemy as sa
from structlog.testing import capture_logs

from adapters.nats.consumer import ConsumerRunner
from adapters.nats.streams import EVENTS_STREAM, ensure_consumer
from adapters.postgres.audit_records import PostgresAuditRecords
from adapters.postgres.retention import PostgresTrim
from adapters.postgres.tables import inbox, inbox_horizons, request_answers
from application.commands import ScheduleLesson
from entrypoints.config.settings import Settings, exports_dir
from entrypoints.ops.audit import find_holes
from entrypoints.runtime import bootstrap
from entrypoints.runtime.exports_wiring import export_runner
from projections import statistics
from tests.builders import export_requested
from tests.integration.helpers import (
    lesson_with_enrollments,
    make_relay,
    operations_api,
    relay_all,
    run,
    stream_messages,
    with_js,
)
from tests.servers import scratch_dir

DAY = timedelta(days=1)
NO_MARGIN = timedelta(0)


def rows(engine: sa.Engine, table: sa.Table, where: Any) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count()).select_from(table).where(where)
            ).scalar_one()
        )


def add_inbox_rows(engine: sa.Engine, consumer: str, count: int, age: timedelta):
    with engine.begin() as conn:
        conn.execute(
            sa.insert(inbox),
            [
                {
                    "consumer": consumer,
                    "event_id": uuid4(),
                    "body_sha256": b"x",
                    "stream_seq": seq,
                    "applied_at": datetime.now(UTC) - age,
                }
                for seq in range(1, count + 1)
            ],
        )


def add_answers(engine: sa.Engine, scope: str, count: int, age: timedelta) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.insert(request_answers),
            [
                {
                    "scope": scope,
                    "key": str(uuid4()),
                    "fingerprint": "f",
                    "status_code": 201,
                    "body": {},
                    "headers": {},
                    "created_at": datetime.now(UTC) - age,
                }
                for _ in range(count)
            ],
        )


def deletes_seen(engine: sa.Engine) -> tuple[list[int], Any]:
    """Rows removed by each DELETE statement this engine runs."""
    seen: list[int] = []

    def after(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("DELETE"):
            seen.append(cursor.rowcount)

    sa.event.listen(engine, "after_cursor_execute", after)
    return seen, after


def test_a_trim_removes_only_rows_past_retention_in_bounded_batches(
    container,
) -> None:
    engine = container.engine
    consumer, other = f"trim-{uuid4().hex[:6]}", f"trim-{uuid4().hex[:6]}"
    scope = f"POST /test/{uuid4().hex[:6]}"
    add_inbox_rows(engine, consumer, 7, 31 * DAY)
    add_inbox_rows(engine, consumer, 4, 29 * DAY)  # within the retention: kept
    add_inbox_rows(engine, other, 2, 40 * DAY)
    add_answers(engine, scope, 5, 8 * DAY)
    add_answers(engine, scope, 2, 6 * DAY)
    seen, listener = deletes_seen(engine)
    try:
        trimmed = PostgresTrim(
            engine, inbox_s=(30 * DAY).total_seconds(),
            answers_s=(7 * DAY).total_seconds(), batch_rows=3,
        ).run_once()  # fmt: skip
    finally:
        sa.event.remove(engine, "after_cursor_execute", listener)

    assert not trimmed.skipped
    assert rows(engine, inbox, inbox.c.consumer == consumer) == 4
    assert rows(engine, inbox, inbox.c.consumer == other) == 0
    assert rows(engine, request_answers, request_answers.c.scope == scope) == 2
    assert trimmed.inbox >= 9
    assert trimmed.answers >= 5
    assert seen, "no DELETE ran"
    assert max(seen) <= 3
    assert sum(seen) == trimmed.inbox + trimmed.answers
    # Each trimmed consumer's horizon moved to the cutoff, 30 days back.
    with engine.connect() as conn:
        horizons = dict(
            conn.execute(
                sa.select(
                    inbox_horizons.c.consumer, inbox_horizons.c.occurred_before
                ).where(inbox_horizons.c.consumer.in_([consumer, other]))
            ).all()
        )
    assert set(horizons) == {consumer, other}
    for horizon in horizons.values():
        assert abs(datetime.now(UTC) - 30 * DAY - horizon) < timedelta(minutes=1)


def test_copies_running_at_once_trim_each_row_once_and_fail_none(container) -> None:
    engine = container.engine
    consumer = f"race-{uuid4().hex[:6]}"
    add_inbox_rows(engine, consumer, 60, 40 * DAY)
    trim = PostgresTrim(
        engine, inbox_s=(30 * DAY).total_seconds(),
        answers_s=(7 * DAY).total_seconds(), batch_rows=7,
    )  # fmt: skip
    results, errors = [], []
    start = threading.Barrier(3)

    def one() -> None:
        start.wait()
        try:
            results.append(trim.run_once())
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert rows(engine, inbox, inbox.c.consumer == consumer) == 0
    assert sum(r.inbox for r in results) >= 60
    assert sum(r.inbox for r in results) < 60 + 1_000


def statistics_runner(name: str, js, container) -> ConsumerRunner:
    return ConsumerRunner(
        name=name, apply=statistics.apply, js=js, engine=container.engine,
        fetch_timeout=0.5,
    )  # fmt: skip


def confirmed(container, lesson_id) -> int:
    with container.engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(statistics.lessons.c.confirmed).where(
                    statistics.lessons.c.lesson_id == lesson_id
                )
            ).scalar_one()
        )


def replay_from_the_start_after_the_inbox_lost_its_rows(
    container, migrated, forget
) -> tuple[int, list[Any], int]:
    """Apply a lesson's events, let `forget` drop the consumer's inbox rows, then
    republish every stream message under a new message id — `club relay rewind
    --to 1` after the inbox was trimmed — and drain the consumer again."""
    database_url, nats_url = migrated
    name = f"horizon-{uuid4().hex[:6]}"
    lesson_id = lesson_with_enrollments(container, 3)

    async def body(js, nc):
        await relay_all(make_relay(container, nc, database_url))
        await ensure_consumer(js, name)
        sub = await js.pull_subscribe_bind(durable=name, stream=EVENTS_STREAM)
        runner = statistics_runner(name, js, container)
        while (await runner.poll(sub)).applied:
            pass
        before = confirmed(container, lesson_id)
        await asyncio.to_thread(forget, name)
        for msg in await stream_messages(js):
            headers = dict(msg.headers) | {"Nats-Msg-Id": f"again-{uuid4()}"}
            await js.publish(msg.subject, msg.data, headers=headers)
        outcomes = []
        while (outcome := await runner.poll(sub)).applied or outcome.duplicates:
            outcomes.append(outcome)
        return before, outcomes

    before, outcomes = run(with_js(nats_url, body))
    return before, outcomes, confirmed(container, lesson_id)


def trim_all_inbox_rows(container) -> Callable[[str], None]:
    """A trim with a one-second inbox retention, run once every row is older."""

    def trim(_: str) -> None:
        time.sleep(1.1)  # every event so far is older than a one-second retention
        PostgresTrim(
            container.engine, inbox_s=1.0, answers_s=DAY.total_seconds(),
            clock_margin=NO_MARGIN,
        ).run_once()  # fmt: skip

    return trim


def test_an_event_from_before_the_trimmed_horizon_is_never_applied_again(
    container, migrated
) -> None:
    with capture_logs() as logs:
        before, outcomes, after = replay_from_the_start_after_the_inbox_lost_its_rows(
            container, migrated, trim_all_inbox_rows(container)
        )
    assert before == 3
    assert sum(o.applied for o in outcomes) == 0
    refused = sum(o.duplicates for o in outcomes)
    assert refused > 0  # the copies did arrive, and were refused as handled
    assert after == before
    beyond = [e for e in logs if e["event"] == "consumer.beyond_inbox_horizon"]
    assert len(beyond) == refused  # each one refused by the horizon, and said so
    assert "rebuild" in beyond[0]["fix"]


def test_without_the_horizon_the_same_replay_would_apply_old_effects_again(
    container, migrated
) -> None:
    """The control: rows deleted with no horizon (what a bare DELETE would do) —
    the replay counts every enrollment twice. The horizon is what prevents it."""

    def delete_rows(name: str) -> None:
        with container.engine.begin() as conn:
            conn.execute(sa.delete(inbox).where(inbox.c.consumer == name))

    before, outcomes, after = replay_from_the_start_after_the_inbox_lost_its_rows(
        container, migrated, delete_rows
    )
    assert sum(o.applied for o in outcomes) > 0
    assert after > before


def test_a_trimmed_export_answers_410_gone_and_a_recent_one_is_served(
    container,
) -> None:
    data_dir = scratch_dir("club-retention-exports-")
    settings = Settings.from_env(
        {
            "CLUB_DATABASE_URL": "postgresql://unused@127.0.0.1/x",
            "CLUB_NATS_URL": "nats://127.0.0.1:4222",
            "CLUB_DATA_DIR": str(data_dir),
            "CLUB_EXPORT_RETENTION": "1h",
        }
    )
    lesson_id = container.app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(), title="Yoga", capacity=1,
            starts_at=datetime(2026, 12, 1, tzinfo=UTC), price_cents=0,
        )
    )  # fmt: skip
    runner = export_runner(container, data_dir)
    old, recent = (export_requested(container.app, lesson_id).id for _ in range(2))
    for export_id in (old, recent):
        runner.handle(export_id)
    two_hours_ago = time.time() - 7200
    os.utime(exports_dir(data_dir) / f"{old}.csv", (two_hours_ago, two_hours_ago))

    report = bootstrap.build_trim(settings, container).once()

    assert report.files.files == 1
    with operations_api(container, data_dir) as api:
        gone = api.get(f"/operations/{old}/result")
        kept = api.get(f"/operations/{recent}/result")
        expired = api.get(f"/operations/{old}").json()
        served = api.get(f"/operations/{recent}").json()
    assert (expired["status"], expired["result_url"]) == ("succeeded", None)
    assert expired["result_expired"] is True  # no URL that would only answer 410
    assert served["result_url"] == f"/operations/{recent}/result"
    assert served["result_expired"] is False
    assert gone.status_code == 410
    assert gone.json()["type"] == "/problems/result-gone"
    assert kept.status_code == 200
    assert not Path(exports_dir(data_dir) / f"{old}.csv").exists()


def audit_after(container, migrated, forget) -> tuple[set[str], set[str]]:
    """A lesson's events applied by both projections' durables, then `forget`
    drops their inbox rows: this lesson's published event ids, and those of them
    `club audit` reports as holes (the database holds other tests' events too,
    which these durables never saw)."""
    database_url, nats_url = migrated
    before = container.app.recorder.max_notification_id() or 0
    lesson_with_enrollments(container, 2)

    async def body(js, nc):
        await relay_all(make_relay(container, nc, database_url))
        for name, (_, apply) in bootstrap.PROJECTIONS.items():
            await ensure_consumer(js, name)
            sub = await js.pull_subscribe_bind(durable=name, stream=EVENTS_STREAM)
            runner = ConsumerRunner(
                name=name, apply=apply, js=js, engine=container.engine,
                fetch_timeout=0.5,
            )  # fmt: skip
            while (await runner.poll(sub)).applied:
                pass
        for name in bootstrap.PROJECTIONS:
            await asyncio.to_thread(forget, name)
        return await find_holes(bootstrap.console_reads(container, js))

    holes = run(with_js(nats_url, body))
    ours = {
        event_id
        for nid, event_id, _, _ in PostgresAuditRecords(
            container.engine, container.app.recorder, container.app.mapper
        ).published_up_to_position()
        if nid > before
    }
    return ours, {hole.event_id for hole in holes} & ours


def test_club_audit_counts_no_trimmed_event_as_a_hole(container, migrated) -> None:
    ours, holes = audit_after(container, migrated, trim_all_inbox_rows(container))
    assert len(ours) >= 3  # the lesson and two enrollments, published
    assert holes == set()


def test_club_audit_still_finds_rows_lost_without_a_trim(container, migrated) -> None:
    """The control: the same rows deleted with no horizon are holes."""

    def delete_rows(name: str) -> None:
        with container.engine.begin() as conn:
            conn.execute(sa.delete(inbox).where(inbox.c.consumer == name))

    ours, holes = audit_after(container, migrated, delete_rows)
    assert holes == ours
