"""A purchase completes on its own: api, saga and payment sandbox as processes.

With no knob set the sandbox answers `pending`, captures ~200 ms later and signs a
webhook to the API; the saga grants access. What `make run` shows, end to end.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.api_client import ClubClient
from tests.identity import ADMIN
from tests.stack import FAST_SAGA, Stack, eventually, running_stack, scratch_for


@pytest.fixture(scope="module")
def stack(migrated: tuple[str, str], request: pytest.FixtureRequest) -> Iterator[Stack]:
    logs, roles = scratch_for(request, "logs"), ("api", "payment", "saga")
    with running_stack(migrated, logs, roles, **FAST_SAGA) as stack:
        yield stack


def test_a_purchase_completes_on_its_own(stack: Stack) -> None:
    base = stack.base
    with ClubClient(base) as club:
        lesson_id = club.paid_lesson()
        answer = club.reserve(lesson_id, club.student())
    assert answer.status_code == 201, answer.text
    purchase = answer.json()
    assert purchase["status"] == "reserved"
    assert purchase["price_cents"] == 2500
    assert (
        httpx.get(f"{base}/lessons/{lesson_id}", headers=ADMIN).json()["seats_held"]
        == 1
    )

    def confirmed() -> dict[str, object] | None:
        body = httpx.get(
            f"{base}/purchases/{purchase['purchase_id']}", headers=ADMIN
        ).json()
        return body if body["status"] == "confirmed" else None

    done = eventually(confirmed, timeout=30)
    assert done["enrollment_id"] is not None
    assert done["next_step"] == "paid; your seat is confirmed"
    lesson = httpx.get(f"{base}/lessons/{lesson_id}", headers=ADMIN).json()
    assert (lesson["seats_held"], lesson["seats_taken"]) == (0, 1)
    [payment] = [
        p
        for p in httpx.get(f"{stack.payment_url}/payments").json()["payments"]
        if p["idempotency_key"] == f"purchase-{purchase['purchase_id']}"
    ]
    assert payment["status"] == "captured"
