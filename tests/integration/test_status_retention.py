"""`club status` shows each store's size beside its retention: rows, stream messages
and export files, the oldest item's age, and each consumer's trimmed horizon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import sqlalchemy as sa

from adapters.postgres.retention import PostgresTrim
from adapters.postgres.tables import inbox
from entrypoints.config.settings import exports_dir
from tests.servers import scratch_dir
from tests.stack import club_env

DAY = timedelta(days=1)


def club(migrated, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=club_env(*migrated, COLUMNS="200", **env), capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip


def test_status_shows_sizes_ages_retention_files_and_horizons(
    migrated, container
) -> None:
    consumer = f"status-{uuid4().hex[:6]}"
    with container.engine.begin() as conn:
        conn.execute(
            sa.insert(inbox),
            [
                {
                    "consumer": consumer, "event_id": uuid4(), "body_sha256": b"x",
                    "stream_seq": seq, "applied_at": datetime.now(UTC) - age,
                }
                for seq, age in ((1, 45 * DAY), (2, 12 * DAY), (3, DAY))
            ],
        )  # fmt: skip
    # 45 days old goes with a 40-day retention; the horizon says so.
    PostgresTrim(
        container.engine, inbox_s=(40 * DAY).total_seconds(),
        answers_s=(7 * DAY).total_seconds(),
    ).run_once()  # fmt: skip
    data_dir = scratch_dir("club-status-retention-")
    files = exports_dir(data_dir)
    files.mkdir(parents=True)
    (files / f"{uuid4()}.csv").write_bytes(b"a" * 10)
    older = files / f"{uuid4()}.csv"
    older.write_bytes(b"b" * 32)
    an_hour_ago = time.time() - 3600
    os.utime(older, (an_hour_ago, an_hour_ago))
    settings = {"CLUB_DATA_DIR": str(data_dir), "CLUB_INBOX_RETENTION": "40d"}

    answer = club(migrated, "status", "--json", **settings)

    assert answer.returncode == 0, answer.stderr
    stores = json.loads(answer.stdout)["stores"]
    assert stores["rows"]["inbox"] >= 2
    assert set(stores["streams"]) >= {"CLUB_EVENTS", "CLUB_DLQ"}
    assert stores["export_files"]["files"] == 2
    assert stores["export_files"]["bytes"] == 42
    assert 3590 < stores["export_files"]["oldest_age_seconds"] < 3700
    assert stores["retention_seconds"] == {
        "inbox": 40 * 86_400,
        "request_answers": 7 * 86_400,
        "CLUB_EVENTS": 7 * 86_400,
        "CLUB_DLQ": 7 * 86_400,
        "CLUB_REPLAY": 7 * 86_400,
        "export_files": 86_400,
    }
    # The 12-day-old row is the oldest kept; the 45-day one went.
    assert 11.9 * 86_400 < stores["oldest_age_seconds"]["inbox"] < 12.1 * 86_400
    horizon = datetime.fromisoformat(stores["inbox_horizons"][consumer])
    assert abs(datetime.now(UTC) - 40 * DAY - horizon) < timedelta(minutes=1)

    table = club(migrated, "status", **settings)
    assert table.returncode == 0, table.stderr
    assert "kept for" in table.stdout
    assert "export files" in table.stdout
    assert f"inbox {consumer}" in table.stdout
    assert "40d" in table.stdout
