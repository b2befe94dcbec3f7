"""Roster exports without servers: the aggregate's rules, the CSV file, the runner."""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from adapters.exports.csv_files import CsvExportFiles, csv_text, neutralised
from application.club import ClubApplication
from application.commands import EnrollStudent, RequestExport, ScheduleLesson
from application.errors import NotFoundError
from application.export_runner import AgeLimit, ExportRunner
from application.notifications import Done, Retry, RetryPolicy
from domain.export import (
    Export,
    ExportFinishedError,
    ExportNotRunningError,
    ExportStatus,
    InvalidExportError,
)

NOW = datetime(2026, 11, 30, 16, 0, tzinfo=UTC)


def requested() -> Export:
    export = Export.request(
        export_id=uuid4(), lesson_id=uuid4(), lesson_version=2, requested_at=NOW
    )
    export.collect_events()
    return export


def test_request_records_requested_pending() -> None:
    export = Export.request(
        export_id=uuid4(), lesson_id=uuid4(), lesson_version=2, requested_at=NOW
    )
    [event] = export.collect_events()
    assert isinstance(event, Export.Requested)
    assert (event.lesson_version, event.requested_at) == (2, NOW)
    assert export.status is ExportStatus.PENDING


def test_a_naive_request_time_is_refused() -> None:
    with pytest.raises(InvalidExportError):
        Export.request(
            export_id=uuid4(),
            lesson_id=uuid4(),
            lesson_version=1,
            requested_at=datetime(2026, 11, 30),  # noqa: DTZ001 - the point
        )


def test_start_then_succeed_records_each_step() -> None:
    export = requested()
    export.start(now=NOW)
    export.succeed(result_name="x.csv", rows=3, now=NOW)
    started, succeeded = export.collect_events()
    assert isinstance(started, Export.Started)
    assert isinstance(succeeded, Export.Succeeded)
    assert (succeeded.result_name, succeeded.rows) == ("x.csv", 3)
    assert export.status is ExportStatus.SUCCEEDED


def test_nothing_succeeds_before_it_started() -> None:
    export = requested()
    with pytest.raises(ExportNotRunningError):
        export.succeed(result_name="x.csv", rows=0, now=NOW)
    assert export.collect_events() == []


@pytest.mark.parametrize("ending", ["succeed", "fail"])
def test_a_finished_export_never_changes(ending: str) -> None:
    export = requested()
    export.start(now=NOW)
    if ending == "succeed":
        export.succeed(result_name="x.csv", rows=0, now=NOW)
    else:
        export.fail(reason="no lesson", now=NOW)
    export.collect_events()
    with pytest.raises(ExportFinishedError):
        export.start(now=NOW)
    with pytest.raises(ExportFinishedError):
        export.fail(reason="again", now=NOW)
    with pytest.raises(ExportFinishedError):
        export.succeed(result_name="y.csv", rows=1, now=NOW)
    assert export.collect_events() == []


def test_a_restart_after_a_crash_counts_attempts() -> None:
    export = requested()
    export.start(now=NOW)
    export.start(now=NOW + timedelta(seconds=30))  # the redelivery after a crash
    assert (export.status, export.attempts) == (ExportStatus.RUNNING, 2)


def test_replaying_the_events_gives_the_same_export() -> None:
    export = Export.request(
        export_id=uuid4(), lesson_id=uuid4(), lesson_version=2, requested_at=NOW
    )
    export.start(now=NOW)
    export.fail(reason="disk full", now=NOW)
    events = export.collect_events()
    replayed = None
    for event in events:
        replayed = event.mutate(replayed)
    assert vars(replayed) == vars(export)


@pytest.mark.parametrize(
    "cell", ['=HYPERLINK("http://x")', "+1+1", "-2", "@SUM(A1)", "\t=1", "\r=1"]
)
def test_a_formula_is_neutralised(cell: str) -> None:
    assert neutralised(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["Ann", "s-1", "1=1", "ann@example.org", ""])
def test_plain_text_is_kept(cell: str) -> None:
    assert neutralised(cell) == cell


def test_csv_quotes_separators_and_line_breaks() -> None:
    text = csv_text(("a", "b"), [('Ann, "the" First', "=cmd"), ("two\nlines", "ok")])
    assert list(csv.reader(io.StringIO(text))) == [
        ["a", "b"],
        ['Ann, "the" First', "'=cmd"],
        ["two\nlines", "ok"],
    ]


def test_a_file_is_complete_under_its_final_name_and_nothing_else_is_left(
    tmp_path: Path,
) -> None:
    files = CsvExportFiles(tmp_path / "exports")
    export_id = uuid4()
    name = files.write(export_id, ("h",), [("v",)])
    assert name == f"{export_id}.csv"
    assert [p.name for p in (tmp_path / "exports").iterdir()] == [name]
    assert files.path_for(export_id).read_bytes() == "\ufeffh\r\nv\r\n".encode()


def test_export_files_and_their_directory_are_the_owners_alone(tmp_path: Path) -> None:
    """Files hold students' names: no other local user reads them, whatever the
    umask, and a directory made earlier under a looser one is closed too."""
    directory = tmp_path / "exports"
    directory.mkdir(mode=0o755)
    old = os.umask(0o002)
    try:
        files = CsvExportFiles(directory)
        export_id = uuid4()
        files.write(export_id, ("h",), [("Ann",)])
    finally:
        os.umask(old)
    assert stat.S_IMODE(files.path_for(export_id).stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


class Names:
    def __init__(self, names: dict[str, str]) -> None:
        self._names = names

    def names(self, student_ids: Sequence[str]) -> dict[str, str]:
        return {s: self._names[s] for s in student_ids if s in self._names}


class BrokenDisk:
    def write(self, export_id: UUID, header: Sequence[str], rows: object) -> str:
        raise OSError(28, "No space left on device")


def lesson_with(app: ClubApplication, *students: str) -> UUID:
    lesson_id = app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(), title="Yoga", capacity=5, starts_at=NOW, price_cents=0
        )
    )
    for student in students:
        app.enroll(
            EnrollStudent(lesson_id=lesson_id, student_id=student, request_id=student)
        )
    return lesson_id


def test_the_runner_exports_the_roster_as_the_request_saw_it(tmp_path: Path) -> None:
    app = ClubApplication()
    lesson_id = lesson_with(app, "ann", "bob")
    cmd = RequestExport(export_id=uuid4(), lesson_id=lesson_id, requested_at=NOW)
    export = app.request_export(cmd)
    lesson_with_more = app.get_lesson(lesson_id)
    lesson_with_more.take_seat(enrollment_id=uuid4(), student_id="late")
    app.save(lesson_with_more)  # after the request: not in this export
    files = CsvExportFiles(tmp_path)
    runner = ExportRunner(
        app=app, names=Names({"ann": "=Ann", "bob": "Bob"}), files=files
    )
    assert runner.handle(export.id) == Done()
    done = app.get_export(export.id)
    assert (done.status, done.rows, done.attempts) == (ExportStatus.SUCCEEDED, 2, 1)
    text = files.path_for(export.id).read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["enrollment_id", "student_id", "name"]
    assert [r[1:] for r in rows[1:]] == [["ann", "'=Ann"], ["bob", "Bob"]]
    assert runner.handle(export.id) == Done()  # a redelivery changes nothing
    assert app.get_export(export.id).version == done.version


def test_a_disk_that_stays_full_fails_the_export_after_the_attempt_limit(
    tmp_path: Path,
) -> None:
    app = ClubApplication()
    cmd = RequestExport(export_id=uuid4(), lesson_id=lesson_with(app), requested_at=NOW)
    export = app.request_export(cmd)
    policy = RetryPolicy(max_attempts=2, first_delay=0.01, max_delay=0.01)
    runner = ExportRunner(app=app, names=Names({}), files=BrokenDisk(), policy=policy)
    assert isinstance(runner.handle(export.id), Retry)
    assert app.get_export(export.id).status is ExportStatus.RUNNING
    assert runner.handle(export.id) == Done()
    failed = app.get_export(export.id)
    assert failed.status is ExportStatus.FAILED
    assert failed.error is not None
    assert "No space left on device" in failed.error


def test_an_old_request_is_reported_and_still_runs(tmp_path: Path) -> None:
    app = ClubApplication()
    lesson_id = lesson_with(app, "ann")
    reported: list[tuple[UUID, float]] = []
    limit = AgeLimit(max_age_s=300, report=lambda i, age: reported.append((i, age)))
    runner = ExportRunner(
        app=app,
        names=Names({}),
        files=CsvExportFiles(tmp_path),
        age_limit=limit,
        clock=lambda: NOW,
    )
    fresh = app.request_export(
        RequestExport(export_id=uuid4(), lesson_id=lesson_id, requested_at=NOW)
    )
    old_at = NOW - timedelta(seconds=301)
    old = app.request_export(
        RequestExport(export_id=uuid4(), lesson_id=lesson_id, requested_at=old_at)
    )
    assert runner.handle(fresh.id) == Done()
    assert reported == []
    assert runner.handle(old.id) == Done()
    assert reported == [(old.id, 301.0)]
    assert app.get_export(old.id).status is ExportStatus.SUCCEEDED


def test_an_unknown_lesson_or_operation_is_not_found() -> None:
    app = ClubApplication()
    with pytest.raises(NotFoundError):
        app.request_export(
            RequestExport(export_id=uuid4(), lesson_id=uuid4(), requested_at=NOW)
        )
    with pytest.raises(NotFoundError):
        app.get_export(lesson_with(app))  # a lesson's id is no operation


class RestartedMeanwhile(CsvExportFiles):
    """While this run writes, a redelivery starts the same export again."""

    def __init__(self, directory: Path, app: ClubApplication) -> None:
        super().__init__(directory)
        self._app = app

    def write(
        self, export_id: UUID, header: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> str:
        other_run = self._app.get_export(export_id)
        other_run.start(now=NOW)
        self._app.save(other_run)
        return super().write(export_id, header, rows)


def test_a_run_that_finishes_while_a_redelivery_restarted_it_still_succeeds(
    tmp_path: Path,
) -> None:
    """Without this, a job longer than the lease never finishes: every redelivery
    restarts it and every finished run loses the race to record it."""
    app = ClubApplication()
    cmd = RequestExport(export_id=uuid4(), lesson_id=lesson_with(app), requested_at=NOW)
    export = app.request_export(cmd)
    files = RestartedMeanwhile(tmp_path, app)
    runner = ExportRunner(app=app, names=Names({}), files=files)
    assert runner.handle(export.id) == Done()
    done = app.get_export(export.id)
    assert (done.status, done.attempts) == (ExportStatus.SUCCEEDED, 2)


def test_the_operations_routes_document_their_answers_and_links() -> None:
    from fastapi import FastAPI

    from entrypoints.http.routes import operations

    app = FastAPI()
    app.include_router(operations.router)
    paths = app.openapi()["paths"]
    post = paths["/lessons/{lesson_id}/roster-exports"]["post"]
    assert {"202", "400", "404", "409", "413", "422", "503"} <= set(post["responses"])
    links = post["responses"]["202"]["links"]
    assert {link["operationId"] for link in links.values()} == {
        "get_operation",
        "get_operation_result",
    }
    key = next(p for p in post["parameters"] if p["name"] == "Idempotency-Key")
    assert key["required"] is False
    result = paths["/operations/{operation_id}/result"]["get"]["responses"]
    assert {"200", "404", "409", "410"} <= set(result)
    assert "text/csv" in result["200"]["content"]
    for status in ("404", "409", "410"):
        assert set(result[status]["content"]) == {"application/problem+json"}
