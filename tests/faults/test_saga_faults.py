"""The purchase saga's four named faults (seed §36), with real processes.

api, relay, saga and the payment sandbox run as processes; a saga is SIGKILLed at a
crash point, or SIGSTOPped past its claim's lease while another one takes over, and
the provider misbehaves through its knobs. Every test ends by comparing Club's
purchases with the provider's own ledger (`GET /payments`): money moved exactly as
many times as Club says.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import httpx
import pytest

from tests.servers import scratch_dir
from tests.stack import FAST_FAULTS, FAST_SAGA, Stack, eventually

SETTLED = {"confirmed", "declined", "refunded", "alternative_accepted"}


class World:
    """A stack of processes for one test, and what a student and an auditor see."""

    def __init__(self, migrated: tuple[str, str], prefix: str, **env: str) -> None:
        self.stack = Stack(
            *migrated, scratch_dir(prefix), **(FAST_FAULTS | FAST_SAGA | env)
        )
        self.base = self.stack.base

    def start(self, *names: str, **env: str) -> None:
        for name in names:
            role = "saga" if name.startswith("saga") else name
            self.stack.start(name, role=role, **env)
            if role == "saga":  # a hold of seconds must not run out before it is up
                log = self.stack.logs[name]
                eventually(lambda log=log: b"role.started" in log.read_bytes())

    def knobs(self, **values: object) -> None:
        answer = httpx.put(f"{self.stack.payment_url}/knobs", json=values)
        assert answer.status_code == 200, answer.text

    def lesson(self, capacity: int = 5) -> str:
        answer = httpx.post(
            f"{self.base}/lessons",
            json={
                "title": "Intensive",
                "capacity": capacity,
                "starts_at": "2027-01-10T10:00:00Z",
                "price_cents": 2500,
            },
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["lesson_id"])

    def reserve(self, lesson_id: str) -> httpx.Response:
        student_id = f"s-{uuid4().hex[:12]}"
        profile = httpx.put(
            f"{self.base}/students/{student_id}",
            json={"email": f"{student_id}@example.org", "name": "Ann"},
        )
        assert profile.status_code in (200, 201), profile.text
        return httpx.post(
            f"{self.base}/lessons/{lesson_id}/purchases",
            json={"student_id": student_id},
            headers={"Idempotency-Key": uuid4().hex},
            timeout=30,
        )

    def purchase(self, lesson_id: str) -> str:
        answer = self.reserve(lesson_id)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["purchase_id"])

    def view(self, purchase_id: str) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.base}/purchases/{purchase_id}").json()
        return body

    def lesson_seats(self, lesson_id: str) -> tuple[int, int]:
        body = httpx.get(f"{self.base}/lessons/{lesson_id}").json()
        return body["seats_held"], body["seats_taken"]

    def until(self, purchase_id: str, *status: str, timeout: float = 30) -> Any:
        def reached() -> dict[str, Any] | None:
            view = self.view(purchase_id)
            return view if view["status"] in status else None

        return eventually(reached, timeout=timeout, interval=0.1)

    def ledger(self) -> dict[str, dict[str, Any]]:
        """The provider's payments by their key (`purchase-<id>`)."""
        answer = httpx.get(f"{self.stack.payment_url}/payments?limit=10000")
        return {p["idempotency_key"]: p for p in answer.json()["payments"]}

    def payment_of(self, purchase_id: str) -> dict[str, Any] | None:
        return self.ledger().get(f"purchase-{purchase_id}")

    def webhooks_sent(self) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = httpx.get(
            f"{self.stack.payment_url}/webhooks"
        ).json()["webhooks"]
        return sent

    def close(self) -> None:
        for proc in self.stack.procs.values():
            proc.send_signal(signal.SIGCONT)  # a stopped process cannot stop
        self.stack.stop_all()


@pytest.fixture
def world_for(migrated: tuple[str, str]) -> Iterator[Any]:
    made: list[World] = []

    def make(prefix: str, **env: str) -> World:
        made.append(World(migrated, prefix, **env))
        return made[-1]

    yield make
    for world in made:
        world.close()


def late_world(world_for: Any, prefix: str, **env: str) -> World:
    """A two-second hold, the saga's own check at four and webhooks six seconds
    late: every payment is late, and refunded (FAST_SAGA offers no alternative)."""
    world: World = world_for(
        prefix, CLUB_HOLD_SECONDS="2", CLUB_SAGA_WEBHOOK_GRACE_SECONDS="4", **env
    )
    world.start("api", "relay", "payment")
    world.knobs(webhook_delay_ms=6000)
    return world


def assert_refunded_once(world: World, purchase_id: str) -> None:
    view = world.view(purchase_id)
    assert (view["status"], view["refund_state"]) == ("refunded", "refunded")
    payment = world.payment_of(purchase_id)
    assert payment is not None
    assert payment["status"] == "captured"
    assert len(payment["refunds"]) == 1, payment
    assert payment["refunded_cents"] == payment["amount_cents"]


def test_a_repeated_late_notification_finds_the_same_process_and_refunds_once(
    world_for: Any,
) -> None:
    world = late_world(world_for, "club-saga-late-")
    world.knobs(webhook_duplicates=2)  # each late webhook arrives three times
    world.start("saga")
    lesson_id = world.lesson()
    purchase_id = world.purchase(lesson_id)
    world.until(purchase_id, "refunded")
    # The capture's webhook was delivered (its two copies follow it at once)...
    key = f"purchase-{purchase_id}"
    eventually(
        lambda: any(
            w["payload"]["type"] == "payment.captured"
            and w["payload"]["idempotency_key"] == key
            and w["delivered_at"] is not None
            for w in world.webhooks_sent()
        ),
        timeout=15,
    )
    time.sleep(1)  # ...and the saga had time to act on them, were it going to
    assert_refunded_once(world, purchase_id)
    assert world.lesson_seats(lesson_id) == (0, 0)  # the hold was never revived


def test_the_refund_provider_down_shows_refund_pending_then_refunds_once(
    world_for: Any,
) -> None:
    world = late_world(world_for, "club-saga-refunds-down-")
    world.knobs(refunds_down=True)
    world.start("saga")
    purchase_id = world.purchase(world.lesson())
    pending = world.until(purchase_id, "refund_pending")
    assert pending["refund_state"] == "pending"
    assert "refund is on its way" in pending["next_step"]
    time.sleep(3)  # several attempts while it is down: none took money back
    payment = world.payment_of(purchase_id)
    assert payment is not None
    assert (payment["status"], payment["refunds"]) == ("captured", [])
    assert world.view(purchase_id)["status"] == "refund_pending"
    world.knobs(refunds_down=False)
    world.until(purchase_id, "refunded")
    time.sleep(1)
    assert_refunded_once(world, purchase_id)


def test_a_saga_killed_after_the_refund_was_accepted_does_not_refund_twice(
    world_for: Any,
) -> None:
    world = late_world(world_for, "club-saga-crash-refund-")
    world.knobs(webhook_delay_ms=600_000)  # only the saga's own check finds it
    world.start("saga", CLUB_CRASH_AT="saga.after_refund_accepted")
    purchase_id = world.purchase(world.lesson())
    assert world.stack.died("saga", timeout=30) == -signal.SIGKILL
    # The provider took the refund; Club recorded only the intent.
    payment = world.payment_of(purchase_id)
    assert payment is not None
    assert len(payment["refunds"]) == 1
    view = world.view(purchase_id)
    assert (view["status"], view["refund_state"]) == ("refund_pending", "pending")
    world.start("saga")
    world.until(purchase_id, "refunded")
    time.sleep(1)
    assert_refunded_once(world, purchase_id)


def test_a_saga_killed_after_the_charge_was_answered_does_not_charge_twice(
    world_for: Any,
) -> None:
    world: World = world_for("club-saga-crash-charge-", CLUB_HOLD_SECONDS="60")
    world.start("api", "relay", "payment")
    world.knobs(webhook_delay_ms=600_000)
    world.start("saga", CLUB_CRASH_AT="saga.after_charge")
    lesson_id = world.lesson()
    purchase_id = world.purchase(lesson_id)
    assert world.stack.died("saga", timeout=30) == -signal.SIGKILL
    assert world.view(purchase_id)["status"] == "payment_pending"
    world.start("saga")
    world.until(purchase_id, "confirmed")
    ledger = world.ledger()
    assert [k for k in ledger if purchase_id in k] == [f"purchase-{purchase_id}"]
    assert world.lesson_seats(lesson_id) == (0, 1)


def test_an_old_saga_resumed_after_a_takeover_charges_and_refunds_nothing_twice(
    world_for: Any,
) -> None:
    world: World = world_for("club-saga-takeover-", CLUB_HOLD_SECONDS="60")
    world.start("api", "relay", "payment")
    world.knobs(latency_ms=2500)  # the old saga is mid-call when it is stopped
    world.start("saga-old")
    lesson_id = world.lesson()
    purchase_id = world.purchase(lesson_id)
    eventually(lambda: world.view(purchase_id)["status"] == "payment_pending")
    old = world.stack.procs["saga-old"]
    old.send_signal(signal.SIGSTOP)
    world.knobs(latency_ms=0)
    world.start("saga-new")
    time.sleep(4)  # past the old one's 3 s lease: the new one has the purchase
    done = world.until(purchase_id, "confirmed")
    old.send_signal(signal.SIGCONT)  # it finishes its call and records what it saw
    time.sleep(3)
    after = world.view(purchase_id)
    assert after["status"] == "confirmed"
    assert after["enrollment_id"] == done["enrollment_id"]
    payment = world.payment_of(purchase_id)
    assert payment is not None
    assert (payment["status"], payment["refunds"]) == ("captured", [])
    assert [k for k in world.ledger() if purchase_id in k] == [
        f"purchase-{purchase_id}"
    ]
    assert world.lesson_seats(lesson_id) == (0, 1)
    assert old.poll() is None  # it was never killed: it lost only its claim
