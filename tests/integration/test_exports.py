"""Roster exports through the real chain: the API records the request as an event,
the relay publishes it to JetStream, the export worker (its own durable, its own
small pool) writes the CSV, and the API serves it. Real PostgreSQL and NATS."""

from __future__ import annotations

import asyncio
import csv
import io
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import pytest
import structlog
from fastapi.testclient import TestClient
from nats.aio.client import Client
from nats.js import JetStreamContext
from prometheus_client import REGISTRY

from adapters.exports.csv_files import CsvExportFiles
from adapters.nats.dlq import DeadLetter, dead_letters
from adapters.nats.streams import EVENTS_STREAM
from adapters.nats.worker import Worker, ensure_worker_consumer
from adapters.postgres.first_failures import FirstFailures
from application.commands import EnrollStudent, ScheduleLesson
from application.contracts.envelope import Envelope
from application.notifications import Outcome, RetryPolicy
from domain.export import ExportStatus
from domain.student import StudentProfile
from entrypoints.config.settings import Settings
from entrypoints.runtime import work_classes
from entrypoints.runtime.exports_wiring import (
    EXPORT_SUBJECTS,
    EXPORTS,
    ensure_export_consumer,
    export_runner,
    export_worker,
    exports_dir,
    job_for,
)
from tests.builders import export_requested
from tests.integration.helpers import (
    email_states_of,
    make_relay,
    operations_api,
    relay_all,
    with_js,
    worker_for,
)
from tests.servers import scratch_dir

FAST = RetryPolicy(max_attempts=2, first_delay=0.05, max_delay=0.1)


@pytest.fixture(scope="module")
def servers(migrated: tuple[str, str]) -> tuple[str, str]:
    """`club migrate` plus the exports durable (the lead's migrate will add it)."""

    async def body(js: JetStreamContext, _nc: object) -> None:
        await ensure_export_consumer(js)

    asyncio.run(with_js(migrated[1], body))
    return migrated


@pytest.fixture
def data_dir() -> Path:
    return scratch_dir("club-exports-")


@pytest.fixture
def api(container, data_dir: Path) -> Iterator[TestClient]:
    with operations_api(container, data_dir) as client:
        yield client


def lesson_of(container, students: dict[str, str]) -> UUID:
    """A lesson whose seats are taken by these students (id -> name), in order."""
    lesson_id = container.app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(), title="Yoga", capacity=max(len(students), 1),
            starts_at=datetime(2026, 12, 1, tzinfo=UTC), price_cents=0,
        )
    )  # fmt: skip
    for student_id, name in students.items():
        container.students.save(
            StudentProfile.create(student_id=student_id, email="a@b.org", name=name)
        )
        container.app.enroll(
            EnrollStudent(
                lesson_id=lesson_id, student_id=student_id, request_id=student_id
            )
        )
    return lesson_id


def publish(container, servers: tuple[str, str]) -> None:
    async def body(js: JetStreamContext, nc: Client) -> None:
        await relay_all(make_relay(container, nc, servers[0]))

    asyncio.run(with_js(servers[1], body))


@contextmanager
def running(
    nats_url: str, make: Callable[[JetStreamContext], Worker]
) -> Iterator[None]:
    """A worker in its own thread and event loop, as in its own process."""
    stopping = threading.Event()
    failures: list[BaseException] = []

    async def body(js: JetStreamContext, _nc: object) -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(make(js).run(stop))
        while not stopping.is_set() and not task.done():
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(task, 30)

    def main() -> None:
        try:
            asyncio.run(with_js(nats_url, body))
        except BaseException as e:
            failures.append(e)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopping.set()
        thread.join(40)
        assert not thread.is_alive(), "the worker did not stop"
        assert not failures, failures


def eventually(check: Callable[[], object], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds}s: {check}")
        time.sleep(0.05)


def status_of(api: TestClient, operation_id: str) -> str:
    response = api.get(f"/operations/{operation_id}")
    assert response.status_code == 200, response.text
    return str(response.json()["status"])


class Gated(CsvExportFiles):
    """Real files, each write counted; a held export's write waits for the test,
    and every write takes `delay` seconds (a heavy job)."""

    def __init__(
        self, directory: Path, *, delay: float = 0.0, hold: UUID | None = None
    ) -> None:
        super().__init__(directory)
        self.release = threading.Event()
        self.hold = hold
        self.delay = delay
        self.writes: list[UUID] = []
        self._lock = threading.Lock()
        self._busy = 0
        self.most_at_once = 0

    def write(
        self, export_id: UUID, header: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> str:
        with self._lock:
            self.writes.append(export_id)
            self._busy += 1
            self.most_at_once = max(self.most_at_once, self._busy)
        try:
            if export_id == self.hold:
                assert self.release.wait(30)
            time.sleep(self.delay)
            return super().write(export_id, header, rows)
        finally:
            with self._lock:
                self._busy -= 1


# Owners as a deployment configures them (CLUB_DLQ_OWNERS, read by Settings).
OWNERS = Settings.from_env(
    {"CLUB_DLQ_OWNERS": "exports/ExportRequested=team-exports"}
).dlq_owners


def export_worker_for(container, data_dir: Path, files=None, **kw) -> Callable:
    runner = export_runner(container, data_dir, files=files, policy=FAST, **kw)

    def make(js: JetStreamContext) -> Worker:
        return export_worker(
            js,
            job_for(runner),
            OWNERS.for_consumer(EXPORTS),
            FirstFailures(container.engine),
        )

    return make


def test_a_request_answers_202_pending_and_is_recorded_before_any_worker(
    servers, container, api
) -> None:
    lesson_id = lesson_of(container, {"ann": "Ann"})
    response = api.post(f"/lessons/{lesson_id}/roster-exports")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "pending"
    assert response.headers["location"] == f"/operations/{body['operation_id']}"
    shown = api.get(response.headers["location"]).json()
    assert shown["status"] == "pending"
    assert shown["kind"] == "roster-export"
    assert shown["lesson_id"] == str(lesson_id)
    assert shown["result_url"] is None
    assert datetime.fromisoformat(shown["requested_at"]).tzinfo is not None
    early = api.get(f"/operations/{body['operation_id']}/result")
    assert early.status_code == 409
    assert early.json()["type"] == "/problems/operation-not-finished"
    publish(container, servers)

    async def published(js: JetStreamContext, _nc: object) -> list[Envelope]:
        sub = await js.subscribe(EXPORT_SUBJECTS, ordered_consumer=True)
        found = []
        while (msg := await sub.next_msg(timeout=2)) is not None:
            found.append(Envelope.from_json(msg.subject, msg.data))
            if found[-1].data["export_id"] == body["operation_id"]:
                break
        await sub.unsubscribe()
        return found

    envelopes = asyncio.run(with_js(servers[1], published))
    assert envelopes[-1].data == {
        "export_id": body["operation_id"],
        "lesson_id": str(lesson_id),
        "lesson_version": 2,  # scheduled, one seat taken
        "requested_at": envelopes[-1].data["requested_at"],
    }


def test_an_unknown_lesson_or_operation_is_404(servers, api) -> None:
    missing = api.post(f"/lessons/{uuid4()}/roster-exports")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert api.get(f"/operations/{uuid4()}").status_code == 404
    assert api.get(f"/operations/{uuid4()}/result").status_code == 404
    assert api.get("/operations/..%2F..%2Fetc%2Fpasswd/result").status_code in (
        404,
        422,
    )


def test_the_same_idempotency_key_names_the_same_export(
    servers, container, api
) -> None:
    lesson_id = lesson_of(container, {})
    key = {"Idempotency-Key": f"k-{uuid4()}"}
    first = api.post(f"/lessons/{lesson_id}/roster-exports", headers=key)
    again = api.post(f"/lessons/{lesson_id}/roster-exports", headers=key)
    assert first.status_code == again.status_code == 202
    assert first.json() == again.json()
    other_lesson = lesson_of(container, {})
    reused = api.post(f"/lessons/{other_lesson}/roster-exports", headers=key)
    assert reused.status_code == 422  # the key with another request
    too_long = {"Idempotency-Key": "k" * 256}
    refused = api.post(f"/lessons/{lesson_id}/roster-exports", headers=too_long)
    assert refused.status_code == 400
    assert refused.json()["type"] == "/problems/invalid-idempotency-key"


def test_the_worker_runs_it_then_it_succeeds_and_serves_the_csv(
    servers, container, api, data_dir
) -> None:
    students = {
        "ann": "Ann Smith",
        "bob": '=HYPERLINK("http://evil.example","click")',
        "cat": '+1, "quoted" name',
        "dan": "@SUM(A1:A9)",
        "eve": "-3",
    }
    lesson_id = lesson_of(container, students)
    operation_id = api.post(f"/lessons/{lesson_id}/roster-exports").json()[
        "operation_id"
    ]
    publish(container, servers)
    files = Gated(exports_dir(data_dir), hold=UUID(operation_id))
    with running(servers[1], export_worker_for(container, data_dir, files)):
        eventually(lambda: status_of(api, operation_id) == "running")
        assert api.get(f"/operations/{operation_id}/result").status_code == 409
        assert not files.path_for(UUID(operation_id)).exists()
        files.release.set()
        eventually(lambda: status_of(api, operation_id) == "succeeded")
    shown = api.get(f"/operations/{operation_id}").json()
    assert shown["result_url"] == f"/operations/{operation_id}/result"
    assert shown["rows"] == len(students)
    assert shown["attempts"] == 1
    result = api.get(shown["result_url"])
    assert result.status_code == 200
    assert result.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(result.content.decode("utf-8-sig"))))
    seats = container.app.get_lesson(lesson_id).seats
    assert rows[0] == ["enrollment_id", "student_id", "name"]
    assert rows[1:] == [
        [str(enrollment_id), student_id, name]
        for (enrollment_id, student_id), name in zip(
            seats.items(),
            [
                "Ann Smith",
                '\'=HYPERLINK("http://evil.example","click")',
                '\'+1, "quoted" name',
                "'@SUM(A1:A9)",
                "'-3",
            ],
            strict=True,
        )
    ]
    (exports_dir(data_dir) / f"{operation_id}.csv").unlink()  # an operator cleaned up
    gone = api.get(shown["result_url"])
    assert gone.status_code == 410
    assert gone.json()["type"] == "/problems/result-gone"


def test_a_failing_export_ends_failed_with_the_reason(
    servers, container, api, data_dir
) -> None:
    exports_dir(data_dir).write_text("not a directory")  # every write fails
    lesson_id = lesson_of(container, {"ann": "Ann"})
    operation_id = api.post(f"/lessons/{lesson_id}/roster-exports").json()[
        "operation_id"
    ]
    publish(container, servers)
    with running(servers[1], export_worker_for(container, data_dir)):
        eventually(lambda: status_of(api, operation_id) == "failed")
    shown = api.get(f"/operations/{operation_id}").json()
    assert shown["result_url"] is None
    assert "gave up after 2 attempts" in shown["error"]
    assert "File exists" in shown["error"]
    result = api.get(f"/operations/{operation_id}/result")
    assert result.status_code == 409
    assert result.json()["type"] == "/problems/operation-failed"


def test_a_redelivered_request_for_a_finished_export_changes_nothing(
    servers, container, api, data_dir
) -> None:
    lesson_id = lesson_of(container, {"ann": "Ann"})
    operation_id = api.post(f"/lessons/{lesson_id}/roster-exports").json()[
        "operation_id"
    ]
    publish(container, servers)
    files = Gated(exports_dir(data_dir))
    make = export_worker_for(container, data_dir, files)
    with running(servers[1], make):
        eventually(lambda: status_of(api, operation_id) == "succeeded")
    done = container.app.get_export(UUID(operation_id))
    written = files.path_for(done.id).stat().st_mtime_ns

    async def redeliver(js: JetStreamContext, _nc: object) -> int:
        """The same message again, as JetStream would after a lost ack."""
        sub = await js.subscribe(EXPORT_SUBJECTS, ordered_consumer=True)
        while True:
            msg = await sub.next_msg(timeout=2)
            if Envelope.from_json(msg.subject, msg.data).aggregate_id == done.id:
                break
        await sub.unsubscribe()
        ack = await js.publish(msg.subject, msg.data, stream=EVENTS_STREAM)
        return ack.seq

    seq = asyncio.run(with_js(servers[1], redeliver))

    async def consumed(js: JetStreamContext, _nc: object) -> bool:
        info = await js.consumer_info(EVENTS_STREAM, EXPORTS)
        return info.ack_floor.stream_seq >= seq

    with running(servers[1], make):
        eventually(lambda: asyncio.run(with_js(servers[1], consumed)))
    again = container.app.get_export(done.id)
    assert again.version == done.version  # no new event recorded
    assert files.writes == [done.id]  # the file was written once
    assert files.path_for(done.id).stat().st_mtime_ns == written


def over_age() -> float:
    value = REGISTRY.get_sample_value(
        "club_work_over_age_total", {"work_class": EXPORTS}
    )
    return value or 0.0


def test_an_export_past_the_age_limit_is_reported_and_still_completes(
    servers, container, data_dir
) -> None:
    lesson_id = lesson_of(container, {"ann": "Ann"})
    now = datetime.now(UTC)
    old = export_requested(container.app, lesson_id, now - timedelta(seconds=400))
    fresh = export_requested(container.app, lesson_id, now)
    publish(container, servers)
    before = over_age()

    def finished() -> bool:
        return all(
            container.app.get_export(e.id).status is ExportStatus.SUCCEEDED
            for e in (old, fresh)
        )

    with (
        structlog.testing.capture_logs() as logs,
        running(servers[1], export_worker_for(container, data_dir, max_age=300)),
    ):
        eventually(finished)
    assert over_age() == before + 1  # the old one only
    [warning] = [e for e in logs if e["event"] == "work.over_age"]
    assert warning["log_level"] == "warning"
    assert warning["job_id"] == str(old.id)
    assert warning["age_s"] >= 400


@pytest.mark.parametrize("keeps_lease", [True, False], ids=["heartbeat", "silent"])
def test_a_long_export_keeps_its_lease_with_in_progress_acks(
    servers, container, data_dir, keeps_lease: bool
) -> None:
    """A job three times longer than ack_wait: beating, it runs once; silent (the
    plain Worker), JetStream hands it to a second slot meanwhile."""
    durable = f"exports-lease-{uuid4().hex[:8]}"

    async def consumer(js: JetStreamContext, _nc: object) -> None:
        await ensure_worker_consumer(js, durable, EXPORT_SUBJECTS, ack_wait=1.0)

    lesson_id = lesson_of(container, {"ann": "Ann"})
    export = export_requested(container.app, lesson_id)
    publish(container, servers)
    asyncio.run(with_js(servers[1], consumer))
    files = Gated(exports_dir(data_dir), delay=3.0)
    runner = export_runner(container, data_dir, files=files, policy=FAST)

    def make(js: JetStreamContext) -> Worker:
        if keeps_lease:
            # No ack_wait given: the beat follows the durable's 1 s, not 30 s.
            return export_worker(
                js,
                job_for(runner),
                OWNERS.for_consumer(durable),
                FirstFailures(container.engine),
                name=durable,
            )
        return worker_for(
            container, js, job_for(runner), name=durable, owners=OWNERS, concurrency=2
        )

    with running(servers[1], make):
        eventually(
            lambda: container.app.get_export(export.id).status is ExportStatus.SUCCEEDED
        )
        time.sleep(1.5)  # a redelivery would have started by now
    runs = files.writes.count(export.id)
    if keeps_lease:
        assert runs == 1
        assert container.app.get_export(export.id).attempts == 1
    else:
        assert runs >= 2  # what the heartbeat prevents


def sent(container, enrollment_id: UUID) -> bool:
    return email_states_of(container, enrollment_id) == ["sent"]


def test_a_pile_of_exports_does_not_delay_a_confirmation_email(
    servers, container, data_dir, email_provider
) -> None:
    """50 slow exports queued on their own durable and pool; the e-mail of an
    enrollment made meanwhile is sent by the notifications worker at once."""
    lesson_id = lesson_of(container, {})
    pile = [export_requested(container.app, lesson_id).id for _ in range(50)]
    publish(container, servers)
    files = Gated(exports_dir(data_dir), delay=2.0)  # each export takes 2 s

    def notifications_worker(js: JetStreamContext) -> Worker:
        job = work_classes.notification_job(container, email_provider, FAST)
        return worker_for(container, js, job, owners=OWNERS, concurrency=8)

    with (
        running(servers[1], export_worker_for(container, data_dir, files)),
        running(servers[1], notifications_worker),
    ):
        eventually(lambda: len(files.writes) >= 2)  # the exports pool is busy
        other = lesson_of(container, {f"s-{uuid4().hex[:8]}": "Ann"})
        [enrollment_id] = container.app.get_lesson(other).seats
        committed = time.monotonic()
        publish(container, servers)
        eventually(lambda: sent(container, enrollment_id), seconds=10)
        took = time.monotonic() - committed  # commit -> e-mail accepted
        finished = sum(
            container.app.get_export(e).finished for e in pile
        )  # still queued behind two slots
    assert took < 5.0  # while 50 exports of 2 s each wait for two slots
    assert finished < len(pile) / 2  # most of the pile was still waiting
    assert files.most_at_once == 2  # the heavy class never had more than its pool


def test_one_shared_pool_would_make_the_email_wait_behind_the_pile(
    servers, container, data_dir, email_provider
) -> None:
    """The counter-example the work classes exist for: one durable and one small
    pool for both kinds of work, and the e-mail waits behind the slow exports."""
    shared = f"shared-{uuid4().hex[:8]}"

    async def consumer(js: JetStreamContext, _nc: object) -> None:
        await ensure_worker_consumer(js, shared, "club.events.>")

    asyncio.run(with_js(servers[1], consumer))
    lesson_id = lesson_of(container, {})
    for _ in range(10):
        export_requested(container.app, lesson_id)
    publish(container, servers)
    files = Gated(exports_dir(data_dir), delay=2.0)
    exports = job_for(export_runner(container, data_dir, files=files, policy=FAST))
    emails = work_classes.notification_job(container, email_provider, FAST)

    async def either(envelope: Envelope, replayed: bool) -> Outcome | None:
        job = exports if envelope.type == "ExportRequested" else emails
        return await job(envelope, replayed)

    def one_pool(js: JetStreamContext) -> Worker:
        return worker_for(
            container, js, either, name=shared, owners=OWNERS, concurrency=2
        )

    with running(servers[1], one_pool):
        eventually(lambda: len(files.writes) >= 2)
        other = lesson_of(container, {f"s-{uuid4().hex[:8]}": "Ann"})
        [enrollment_id] = container.app.get_lesson(other).seats
        publish(container, servers)
        time.sleep(5.0)
        late = not sent(container, enrollment_id)
    assert late  # still queued behind the exports in the one pool


def test_a_forged_request_for_no_export_is_dead_lettered_with_the_reason(
    servers, container, data_dir
) -> None:
    """Anyone who can publish may send an ExportRequested for an export that was
    never recorded: nothing is written, and its owner gets a DLQ entry."""
    forged_id = uuid4()
    forged = Envelope(
        event_id=uuid4(),
        type="ExportRequested",
        schema_version=1,
        aggregate="export",
        aggregate_id=forged_id,
        aggregate_version=1,
        occurred_at=datetime.now(UTC),
        data={
            "export_id": str(forged_id),
            "lesson_id": str(uuid4()),
            "lesson_version": 1,
            "requested_at": "2026-11-30T09:00:00Z",
        },
    )

    async def publish_forged(js: JetStreamContext, _nc: object) -> None:
        await js.publish(forged.subject, forged.to_json(), stream=EVENTS_STREAM)

    async def entries(js: JetStreamContext, _nc: object) -> list[DeadLetter]:
        return [e async for e in dead_letters(js, EXPORTS)]

    asyncio.run(with_js(servers[1], publish_forged))
    files = Gated(exports_dir(data_dir))
    found: list[DeadLetter] = []

    def dead_lettered() -> bool:
        found[:] = asyncio.run(with_js(servers[1], entries))
        return any(str(forged_id) in e.reason for e in found)

    with running(servers[1], export_worker_for(container, data_dir, files)):
        eventually(dead_lettered)
    [entry] = [e for e in found if str(forged_id) in e.reason]
    assert entry.reason == f"export {forged_id} is not in the event store"
    assert entry.owner == "team-exports"  # by the rule for this consumer and type
    assert forged_id not in files.writes
