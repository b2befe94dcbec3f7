"""The notifications worker alone: N e-mails queued, no arrivals, no pacing.

`python -m bench.worker_alone [N]` prints the worker's e-mails per second and its
CPU per e-mail (psutil, the whole process), from its first e-mail out (its start-up
is not measured) until the last. The provider is the sandbox with its rate limit
lifted, the enrollments are saved in-process before the worker starts; the system
PostgreSQL at 127.0.0.1:5432 (a database of its own) and an embedded NATS serve.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

import httpx
import psutil

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.scratch import fresh_database, scratch_dir
from application.commands import EnrollStudent
from bench.common import new_lesson, role, students
from bench.jobs import email_sandbox, unsent
from bench.run import club

POSTGRES = os.environ.get(
    "CLUB_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def main(count: int) -> None:
    scratch = scratch_dir("club-bench-worker-")
    broker = EmbeddedNats(scratch / "nats", sync_always=True)
    nats_url = broker.start()
    try:
        with fresh_database(POSTGRES) as url, club(url, nats_url) as container:
            lesson = new_lesson(container.app, count)
            who = students(container, count)
            for student in who:
                container.app.enroll(
                    EnrollStudent(
                        lesson_id=lesson,
                        student_id=student,
                        request_id=str(uuid.uuid4()),
                    )
                )
            with (
                email_sandbox(scratch / "sandbox") as sandbox,
                role(url, nats_url, "relay"),
            ):
                httpx.put(f"{sandbox}/knobs", json={"rate_limit_per_s": 1_000_000})
                with role(
                    url, nats_url, "worker", "notifications",
                    CLUB_EMAIL_PROVIDER_URL=sandbox, CLUB_EMAIL_RATE_PER_S="1000000",
                ) as worker:  # fmt: skip
                    process = psutil.Process(worker.pid)
                    while unsent(container, count, who) == count:
                        time.sleep(0.01)
                    cpu = sum(process.cpu_times()[:2])
                    began, left = time.monotonic(), unsent(container, count, who)
                    while unsent(container, count, who) > 0:
                        time.sleep(0.05)
                    took = time.monotonic() - began
                    cpu = sum(process.cpu_times()[:2]) - cpu
        print(
            f"{left} e-mails in {took:.1f} s = {left / took:.0f}/s; worker CPU "
            f"{1000 * cpu / left:.2f} ms per e-mail; load {os.getloadavg()[0]:.1f}"
        )
    finally:
        broker.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1500)
