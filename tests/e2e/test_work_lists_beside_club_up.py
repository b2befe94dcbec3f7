"""Beside `club up` (only CLUB_DATA_DIR set), `club purchases|notifications|exports
list` find the running servers and list what the roles did, and the API's
/metrics serves the work-by-state gauges the alerts read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from adapters.embedded.process import free_port
from tests.api_client import ClubClient
from tests.e2e.test_club_up import club_up, ctrl_c, up_log
from tests.e2e.test_club_up_purchase import first_purchase
from tests.identity import ADMIN
from tests.servers import scratch_dir
from tests.stack import eventually

STARTUP_S = 180
GAUGES = (
    'club_purchases{status="manual_review"}',
    'club_notifications{state="unknown"}',
    'club_exports{status="failed"}',
    'club_work_oldest_age_seconds{kind="purchases",state="manual_review"}',
    "club_manual_reviews_waiting",
)


def listed(club: Any, *argv: str) -> list[dict[str, Any]]:
    answer = club(*argv, "--json")
    assert answer.returncode == 0, answer.stderr
    return [json.loads(line) for line in answer.stdout.splitlines()]


@pytest.mark.timeout(600)
def test_the_lists_answer_beside_club_up_and_the_api_serves_their_gauges() -> None:
    data_dir = scratch_dir("club-up-lists-") / "data"
    beside = {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")}
    beside["CLUB_DATA_DIR"] = str(data_dir)

    def club(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "entrypoints.cli", *argv],
            env=beside, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    with club_up(
        data_dir,
        free_port(),
        # Nine roles import and connect at once on a shared two-core machine.
        ready_within=STARTUP_S,
        CLUB_EMAIL_PROVIDER_URL=f"http://127.0.0.1:{free_port()}",
        CLUB_PAYMENT_PROVIDER_URL=f"http://127.0.0.1:{free_port()}",
        CLUB_PAYMENT_WEBHOOK_SECRET="",
    ) as (api, proc):
        purchase_id = first_purchase(api, "lists-purchase").json()["purchase_id"]
        with ClubClient(api, timeout=10, patient=True) as client:
            lesson_id = client.lesson(capacity=4)
            enrolled = client.enroll(lesson_id, client.student()).json()
        asked = httpx.post(
            f"{api}/lessons/{lesson_id}/roster-exports", timeout=10, headers=ADMIN
        )
        assert asked.status_code == 202, asked.text
        export_id = asked.json()["operation_id"]

        def ids(*argv: str) -> set[str]:
            return {row["id"] for row in listed(club, *argv)}

        eventually(
            lambda: purchase_id in ids("purchases", "list", "--status", "confirmed"),
            timeout=60,
        )
        eventually(
            lambda: export_id in ids("exports", "list", "--status", "succeeded"),
            timeout=60,
        )
        sent = eventually(
            lambda: [
                row
                for row in listed(club, "notifications", "list", "--state", "sent")
                if row["enrollment_id"] == enrolled["enrollment_id"]
            ],
            timeout=60,
        )
        assert sent[0]["age_seconds"] >= 0
        tallies = listed(club, "purchases", "list")
        assert {t["state"] for t in tallies} >= {"manual_review", "refund_failed"}
        bad = club("notifications", "list", "--state", "lost")
        assert bad.returncode == 2
        assert "valid: pending, sending, sent, unknown, failed, dead-lettered" in (
            bad.stderr
        )
        metrics = re.search(r"metrics\s+api\s+(http://\S+/metrics)", up_log(data_dir))
        assert metrics is not None, up_log(data_dir)
        scraped = httpx.get(metrics.group(1), timeout=10).text
        for gauge in GAUGES:
            assert f"{gauge} 0.0" in scraped, gauge
        ctrl_c(proc)
