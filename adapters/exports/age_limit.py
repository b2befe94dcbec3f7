"""The heavy work class's age limit: past it, a metric and a warning, and the work
still runs (an export that waited too long is late, never dropped)."""

from __future__ import annotations

from uuid import UUID

import structlog

from adapters.metrics import WORK_OVER_AGE
from application.export_runner import OverAge

log = structlog.get_logger()


def over_age_reporter(work_class: str, max_age_s: float) -> OverAge:
    def report(job_id: UUID, age_s: float) -> None:
        WORK_OVER_AGE.labels(work_class=work_class).inc()
        log.warning(
            "work.over_age",
            work_class=work_class,
            job_id=str(job_id),
            age_s=round(age_s, 1),
            max_age_s=max_age_s,
        )

    return report
