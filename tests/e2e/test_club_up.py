"""`club up` on a machine with no services: embedded servers, every role, Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import uuid4

import httpx
import psutil

from adapters.embedded.process import free_port
from tests.servers import scratch_dir
from tests.stack import club_env, eventually, wait_ready


@contextmanager
def club_up(data_dir: Path, port: int) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    env = club_env("", "", CLUB_DATA_DIR=str(data_dir), CLUB_HTTP_PORT=str(port))
    del env["CLUB_DATABASE_URL"], env["CLUB_NATS_URL"]  # nothing runs: embed
    log = (data_dir.parent / "up.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "entrypoints.cli", "up"], env=env, stdout=log, stderr=log
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, timeout=60)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.kill()


def ctrl_c(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """Interrupt the supervisor as a terminal would; returns what it had started."""
    tree = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0
    return tree


def test_club_up_serves_stops_cleanly_and_keeps_its_data() -> None:
    data_dir = scratch_dir("club-up-") / "data"
    port = free_port()
    student, key = f"s-{uuid4().hex[:8]}", str(uuid4())
    with club_up(data_dir, port) as (api, proc):
        assert httpx.put(
            f"{api}/students/{student}", json={"email": "a@b.org", "name": "Ann"}
        ).is_success
        lesson_id = httpx.post(
            f"{api}/lessons",
            json={"title": "Yoga", "capacity": 4, "starts_at": "2026-12-01T10:00:00Z"},
        ).json()["lesson_id"]
        enrolled = httpx.post(
            f"{api}/lessons/{lesson_id}/enrollments",
            json={"student_id": student},
            headers={"Idempotency-Key": key},
        )
        assert enrolled.status_code == 201
        eventually(
            lambda: (
                httpx.get(f"{api}/statistics").json()["totals"]["enrollments_confirmed"]
                == 1
            )
        )
        started = ctrl_c(proc)
    assert len(started) >= 5  # postgres, nats-server, api, relay, projector
    _, alive = psutil.wait_procs(started, timeout=5)
    assert alive == [], f"left behind: {alive}"

    with club_up(data_dir, port) as (api, proc):
        assert httpx.get(f"{api}/lessons/{lesson_id}").json()["seats_taken"] == 1
        stats = httpx.get(f"{api}/statistics").json()
        assert stats["totals"]["enrollments_confirmed"] == 1
        ctrl_c(proc)
