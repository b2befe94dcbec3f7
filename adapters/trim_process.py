"""`club trim`: retention as a long-running role, or one pass for cron (`--once`).

Each pass removes what is past its store's retention (application/retention.py):
inbox rows (after moving each consumer's horizon past them), stored answers to
Idempotency-Keys, and export files. The streams need no pass: JetStream drops their
old messages itself (`max_age`, set by `club migrate`). Why a role of its own:
docs/decisions/2026-11-30-retention.md.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import attrs
import structlog

from adapters.exports.retention import ExportFiles, trim_export_files
from adapters.postgres.retention import PostgresTrim, TrimmedRows
from adapters.transient import TRANSIENT

log = structlog.get_logger()

TRIM_EVERY_S = 600.0  # retention is counted in days: a pass every ten minutes


@attrs.frozen
class TrimReport:
    rows: TrimmedRows
    files: ExportFiles


class TrimProcess:
    def __init__(
        self,
        *,
        database: PostgresTrim,
        exports_dir: Path,
        exports_s: float,
        every_s: float = TRIM_EVERY_S,
    ) -> None:
        self._database = database
        self._exports_dir = exports_dir
        self._exports_s = exports_s
        self._every_s = every_s

    def once(self) -> TrimReport:
        rows = self._database.run_once()
        files = trim_export_files(self._exports_dir, self._exports_s)
        report = TrimReport(rows=rows, files=files)
        log.info(
            "trim.pass",
            skipped=rows.skipped,  # another copy was trimming
            inbox_rows=rows.inbox,
            answers=rows.answers,
            export_files=files.files,
            export_bytes=files.bytes,
        )
        return report

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.to_thread(self.once)
            except TRANSIENT as e:  # the database away: the next pass tries again
                log.warning("trim.retry", error=repr(e))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._every_s)
