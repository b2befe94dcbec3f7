"""`club purchases resolve`: an operator settles a purchase in manual review, from
the command line, against a real database; the decision is recorded with who and
why, and anything else is refused naming the state or the decision that fits."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from fastapi.testclient import TestClient

from domain.purchase import Purchase
from entrypoints.runtime.api import create_app
from tests.api_client import ClubClient
from tests.identity import ADMIN, VERIFIER


@pytest.fixture(scope="module")
def api(container) -> Iterator[TestClient]:
    app = create_app(container, None, hold_seconds=60, verifier=VERIFIER)
    with TestClient(app, headers=ADMIN) as client:
        yield client


def club(migrated, *args: str) -> subprocess.CompletedProcess[str]:
    database_url, nats_url = migrated
    env = {**os.environ, "CLUB_DATABASE_URL": database_url, "CLUB_NATS_URL": nats_url}
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "purchases", "resolve", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def in_review(api: TestClient, container) -> tuple[str, str]:
    """A held seat whose charge went out and whose outcome nobody knows."""
    client = ClubClient(api)
    lesson_id = client.paid_lesson(capacity=1)
    answer = client.reserve(lesson_id, client.student())
    purchase_id = UUID(answer.json()["purchase_id"])
    container.app.request_payment(
        purchase_id, next_check_at=datetime.now(UTC) + timedelta(hours=1)
    )
    container.app.require_review(purchase_id, reason="provider unsure", owner="o")
    return str(purchase_id), lesson_id


def test_cancel_from_the_command_line_is_recorded_with_who_and_why(
    api, container, migrated
) -> None:
    purchase_id, lesson_id = in_review(api, container)
    done = club(migrated, purchase_id, "--cancel", "--reason", "student asked")
    assert done.returncode == 0, done.stderr
    assert "resolved with --cancel: cancelled" in " ".join(done.stdout.split())
    purchase = container.app.get_purchase(UUID(purchase_id))
    assert isinstance(purchase, Purchase)
    assert (purchase.resolution, purchase.resolved_by) == ("cancel", getpass.getuser())
    [resolved] = [
        e
        for e in container.app.repository.event_store.get(UUID(purchase_id))
        if isinstance(e, Purchase.ReviewResolved)
    ]
    assert (resolved.operator, resolved.reason) == (getpass.getuser(), "student asked")
    seats = api.get(f"/lessons/{lesson_id}").json()
    assert (seats["seats_held"], seats["seats_taken"]) == (0, 0)
    again = club(migrated, purchase_id, "--refund", "--reason", "twice")
    assert again.returncode == 2
    assert f"purchase {purchase_id} is cancelled" in again.stderr
    assert "only manual review is resolved" in again.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["not-an-id", "--cancel", "--reason", "x"], "ID is a purchase's UUID"),
        (["00000000-0000-0000-0000-000000000000", "--cancel", "--reason", "x"],
         "no purchase 00000000-0000-0000-0000-000000000000"),
        (["IN_REVIEW", "--refund", "--reason", "x"], "resolve it with --cancel"),
        (["IN_REVIEW", "--cancel", "--reason", "  "], "--reason says why"),
    ],
)  # fmt: skip
def test_a_resolution_that_cannot_be_made_is_one_line_naming_the_fix(
    api, container, migrated, args: list[str], says: str
) -> None:
    purchase_id, _ = in_review(api, container)
    refused = club(migrated, *[purchase_id if a == "IN_REVIEW" else a for a in args])
    assert refused.returncode == 2, refused.stdout
    assert says in refused.stderr
    assert "Traceback" not in refused.stderr
    assert container.app.get_purchase(UUID(purchase_id)).status == "manual_review"
