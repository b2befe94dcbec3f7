"""The heavy work class, wired: roster exports on their own durable and small pool.

Exports run on the `exports` durable with a pool of `EXPORT_CONCURRENCY` slots
(notifications have 8 of their own), so a pile of exports can only ever occupy
these two slots, never a notification's (docs/background.md §33: urgent and heavy work
are separate classes with bounded resources). Past `max_age` a started export is
reported (metric + warning) and still runs: late, never starved.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from nats.js import JetStreamContext

from adapters.exports.age_limit import over_age_reporter
from adapters.exports.csv_files import CsvExportFiles
from adapters.exports.names import SqlStudentNames
from adapters.nats.dead_letters import Owner
from adapters.nats.heartbeat import HeartbeatWorker
from adapters.nats.streams import ACK_WAIT_S
from adapters.nats.worker import Job, ensure_worker_consumer
from adapters.postgres.first_failures import FirstFailures
from application.contracts.envelope import Envelope
from application.contracts.events import ExportRequestedV1
from application.contracts.mapping import decode
from application.export_runner import AgeLimit, ExportRunner
from application.notifications import Outcome, RetryPolicy
from application.ports import ExportFiles
from entrypoints.config.catalogue import EXPORTS, WORK_CLASSES
from entrypoints.config.container import Container
from entrypoints.config.settings import exports_dir

# The work class, its durable and its DLQ subject; its filter; its slots.
EXPORT_SUBJECTS = WORK_CLASSES[EXPORTS].subjects
EXPORT_CONCURRENCY = WORK_CLASSES[EXPORTS].slots
DEFAULT_MAX_AGE_S = 300.0


def export_files(data_dir: Path) -> CsvExportFiles:
    return CsvExportFiles(exports_dir(data_dir))


def export_runner(
    container: Container,
    data_dir: Path,
    max_age: float = DEFAULT_MAX_AGE_S,
    *,
    files: ExportFiles | None = None,
    policy: RetryPolicy | None = None,
) -> ExportRunner:
    return ExportRunner(
        app=container.app,
        names=SqlStudentNames(container.engine),
        files=files or export_files(data_dir),
        age_limit=AgeLimit(
            max_age_s=max_age, report=over_age_reporter(EXPORTS, max_age)
        ),
        policy=policy,
    )


def job_for(runner: ExportRunner) -> Job:
    """The export worker's job: the request in, the recorded outcome out."""

    async def job(envelope: Envelope, _replayed: bool) -> Outcome | None:
        # A replay from the DLQ runs like a delivery: a finished export stays done.
        event = decode(envelope)
        if not isinstance(event, ExportRequestedV1):
            return None  # another export event: nothing to run
        return await asyncio.to_thread(runner.handle, event.export_id)

    return job


def export_job(
    container: Container, data_dir: Path, max_age: float = DEFAULT_MAX_AGE_S
) -> Job:
    return job_for(export_runner(container, data_dir, max_age))


def export_worker(
    js: JetStreamContext,
    job: Job,
    owner: Owner,
    failures: FirstFailures,
    *,
    ack_wait: float = ACK_WAIT_S,
    concurrency: int = EXPORT_CONCURRENCY,
    name: str = EXPORTS,
) -> HeartbeatWorker:
    """Heavy jobs keep their lease with in-progress acks while they run."""
    return HeartbeatWorker(
        name=name,
        js=js,
        job=job,
        owner=owner,
        failures=failures,
        concurrency=concurrency,
        ack_wait=ack_wait,
    )


async def ensure_export_consumer(
    js: JetStreamContext, *, ack_wait: float = ACK_WAIT_S
) -> None:
    """For `club migrate` (bootstrap.migrate_broker)."""
    await ensure_worker_consumer(js, EXPORTS, EXPORT_SUBJECTS, ack_wait=ack_wait)
