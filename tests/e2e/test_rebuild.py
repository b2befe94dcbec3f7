"""`club projections rebuild` while enrollments keep arriving and the API serves."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from uuid import UUID

import httpx
import sqlalchemy as sa

from adapters.nats.dlq import dead_lettered
from adapters.postgres.skips import list_skips
from adapters.postgres.tables import inbox
from application.contracts.events import EnrollmentCancelledV1, EnrollmentConfirmedV2
from application.contracts.mapping import decode
from application.ids import event_id
from projections import rosters, statistics
from tests.faults.workload import Enroller, expected_event_ids
from tests.identity import ADMIN
from tests.integration.helpers import published, run, with_js
from tests.integration.test_rebuild_never_stops import (
    store_lesson_bypassing_the_domain,
)
from tests.stack import eventually


def truth(container) -> tuple[Counter, dict[UUID, str]]:
    """From the event store: confirmed per lesson, and each enrollment's status."""
    confirmed: Counter = Counter()
    status: dict[UUID, str] = {}
    for envelope in published(container):
        match decode(envelope):
            case EnrollmentConfirmedV2(lesson_id=lesson, enrollment_id=enrollment):
                confirmed[lesson] += 1
                status[enrollment] = "confirmed"
            case EnrollmentCancelledV1(enrollment_id=enrollment):
                status[enrollment] = "cancelled"
    return confirmed, status


def read_models(container) -> tuple[Counter, dict[UUID, str]]:
    with container.engine.connect() as conn:
        confirmed = Counter(
            {
                r.lesson_id: r.confirmed
                for r in conn.execute(sa.select(statistics.lessons))
                if r.confirmed
            }
        )
        status = {
            r.enrollment_id: r.status for r in conn.execute(sa.select(rosters.entries))
        }
    return confirmed, status


def rebuild(stack, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "projections", "rebuild", name],
        env=stack.env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_rebuilds_equal_the_live_models_while_enrollments_keep_arriving(
    stack, container
) -> None:
    warm_up = Enroller(stack.base, count=150)
    warm_up.start()
    warm_up.join(60)
    assert warm_up.error is None

    serving: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        with httpx.Client(base_url=stack.base, timeout=10, headers=ADMIN) as http:
            lesson_id = warm_up.lessons[0][0]
            while not stop.is_set():
                serving.append(http.get("/statistics").status_code)
                serving.append(http.get(f"/lessons/{lesson_id}/roster").status_code)

    workload = Enroller(stack.base, count=150)
    threads = [workload, threading.Thread(target=reader, daemon=True)]
    for thread in threads:
        thread.start()
    results = [rebuild(stack, "rosters"), rebuild(stack, "statistics")]
    workload.join(60)
    stop.set()
    threads[1].join(10)

    for result in results:
        assert result.returncode == 0, result.stderr
        assert "rebuilt from the event store" in result.stdout
    assert workload.error is None
    assert set(serving) == {200}  # the API served throughout
    eventually(lambda: read_models(container) == truth(container), timeout=30)
    with container.engine.connect() as conn:
        for name in ("rosters", "statistics"):
            rows = conn.execute(
                sa.select(sa.func.count())
                .select_from(inbox)
                .where(inbox.c.consumer == name)
            ).scalar_one()
            assert rows == len(expected_event_ids(container))  # each event once
    roster = httpx.get(
        f"{stack.base}/lessons/{warm_up.lessons[0][0]}/roster", headers=ADMIN
    ).json()
    assert roster["last_applied_seq"] > 0
    assert len(roster["students"]) == truth(container)[0][UUID(warm_up.lessons[0][0])]


def audit(stack) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "audit"],
        env=stack.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def skipped_id(container) -> int:
    [skipped] = list_skips(container.engine, "statistics")
    return skipped.notification_id


def test_a_poison_event_is_skipped_by_the_rebuild_and_dead_lettered_live(
    stack, container
) -> None:
    """A stored event the statistics table refuses (NUL in a title, as older code
    let in): the live projector retries it, dead-letters it and goes on; the
    rebuild reports, records and skips it; `club audit` finds no hole."""
    poison = store_lesson_bypassing_the_domain(container, "Yo\u0000ga")
    workload = Enroller(stack.base, count=20)
    workload.start()
    result = rebuild(stack, "statistics")
    workload.join(60)

    assert result.returncode == 0, result.stderr
    assert "rebuild.skipped_poison_event" in result.stdout + result.stderr
    assert f"club: skipped notification {skipped_id(container)}" in result.stdout
    [skipped] = list_skips(container.engine, "statistics")
    assert skipped.event_id == event_id(poison, 1)
    assert skipped.reason.startswith("DataError: PostgreSQL text fields cannot")
    assert workload.error is None
    # Default retries: 1 + 2 + 4 + 8 s of NAK delays, then the dead letter.
    eventually(lambda: audit(stack).returncode == 0, timeout=90)
    eventually(lambda: read_models(container) == truth(container), timeout=30)
    with container.engine.connect() as conn:
        title = conn.execute(
            sa.select(statistics.lessons.c.title).where(
                statistics.lessons.c.lesson_id == poison
            )
        ).scalar_one_or_none()
    assert title is None
    dead = run(
        with_js(
            stack.env["CLUB_NATS_URL"], lambda js, _: dead_lettered(js, "statistics")
        )
    )
    assert str(event_id(poison, 1)) in dead
