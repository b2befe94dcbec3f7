"""A purchase completes on its own: api, saga and payment sandbox as processes.

With no knob set the sandbox answers `pending`, captures ~200 ms later and signs a
webhook to the API; the saga grants access. What `make run` shows, end to end.
"""

from __future__ import annotations

from collections.abc import Iterator
from uuid import uuid4

import httpx
import pytest

from tests.servers import scratch_dir
from tests.stack import FAST_SAGA, Stack, eventually


@pytest.fixture(scope="module")
def stack(migrated: tuple[str, str]) -> Iterator[Stack]:
    stack = Stack(*migrated, scratch_dir("club-purchase-flow-"), **FAST_SAGA)
    for name in ("api", "payment", "saga"):
        stack.start(name)
    yield stack
    stack.stop_all()


def paid_lesson(base: str, capacity: int = 3, price_cents: int = 2500) -> str:
    answer = httpx.post(
        f"{base}/lessons",
        json={
            "title": "Intensive",
            "capacity": capacity,
            "starts_at": "2027-01-10T10:00:00Z",
            "price_cents": price_cents,
        },
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["lesson_id"])


def student(base: str) -> str:
    student_id = f"s-{uuid4().hex[:12]}"
    answer = httpx.put(
        f"{base}/students/{student_id}",
        json={"email": f"{student_id}@example.org", "name": "Ann"},
    )
    assert answer.status_code in (200, 201), answer.text
    return student_id


def reserve(base: str, lesson_id: str, student_id: str) -> dict[str, object]:
    answer = httpx.post(
        f"{base}/lessons/{lesson_id}/purchases",
        json={"student_id": student_id},
        headers={"Idempotency-Key": uuid4().hex},
    )
    assert answer.status_code == 201, answer.text
    body: dict[str, object] = answer.json()
    return body


def test_a_purchase_completes_on_its_own(stack: Stack) -> None:
    base = stack.base
    lesson_id = paid_lesson(base)
    purchase = reserve(base, lesson_id, student(base))
    assert purchase["status"] == "reserved"
    assert purchase["price_cents"] == 2500
    assert httpx.get(f"{base}/lessons/{lesson_id}").json()["seats_held"] == 1

    def confirmed() -> dict[str, object] | None:
        body = httpx.get(f"{base}/purchases/{purchase['purchase_id']}").json()
        return body if body["status"] == "confirmed" else None

    done = eventually(confirmed, timeout=30)
    assert done["enrollment_id"] is not None
    assert done["next_step"] == "paid; your seat is confirmed"
    lesson = httpx.get(f"{base}/lessons/{lesson_id}").json()
    assert (lesson["seats_held"], lesson["seats_taken"]) == (0, 1)
    [payment] = [
        p
        for p in httpx.get(f"{stack.payment_url}/payments").json()["payments"]
        if p["idempotency_key"] == f"purchase-{purchase['purchase_id']}"
    ]
    assert payment["status"] == "captured"
