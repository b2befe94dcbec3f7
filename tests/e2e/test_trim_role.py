"""`club trim` as cron runs it (`--once`) and as `club up` runs it (until SIGTERM)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import sqlalchemy as sa

from adapters.postgres.tables import inbox
from tests.servers import scratch_dir
from tests.stack import club_env


def old_inbox_row(container, consumer: str) -> None:
    with container.engine.begin() as conn:
        conn.execute(
            sa.insert(inbox).values(
                consumer=consumer, event_id=uuid4(), body_sha256=b"x", stream_seq=1,
                applied_at=datetime.now(UTC) - timedelta(days=31),
            )
        )  # fmt: skip


def left(container, consumer: str) -> int:
    with container.engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count())
                .select_from(inbox)
                .where(inbox.c.consumer == consumer)
            ).scalar_one()
        )


def env(migrated) -> dict[str, str]:
    return club_env(*migrated, CLUB_DATA_DIR=str(scratch_dir("club-trim-role-")))


def test_trim_once_trims_and_says_what(migrated, container) -> None:
    consumer = f"cron-{uuid4().hex[:6]}"
    old_inbox_row(container, consumer)
    answer = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "trim", "--once"],
        env=env(migrated), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    # The last line is the answer (the pass's log line, for a cron log, before it).
    assert answer.stdout.splitlines()[-1].startswith("club: trimmed 1 inbox rows, ")
    assert left(container, consumer) == 0


def test_the_trim_role_trims_at_start_and_stops_on_sigterm(migrated, container) -> None:
    consumer = f"role-{uuid4().hex[:6]}"
    old_inbox_row(container, consumer)
    role = subprocess.Popen(
        [sys.executable, "-m", "entrypoints.cli", "trim"],
        env=env(migrated), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while left(container, consumer) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left(container, consumer) == 0
        role.send_signal(signal.SIGTERM)
        assert role.wait(timeout=15) == 0
    finally:
        if role.poll() is None:
            role.kill()
            role.wait()
