"""100 students buy into a 10-seat lesson while the provider misbehaves.

Random declines, lost responses (captured, the answer dropped), slow answers and
webhooks that arrive after a two-second hold ran out. Never more than 10 seats held
+ taken (watched over HTTP while it runs, and at every version of the lesson in the
event store afterwards); every captured payment is an enrollment or refunded; and
what `GET /purchases/{id}` says matches the provider's own ledger for every one.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

import httpx

from domain.lesson import Lesson
from entrypoints.runtime import bootstrap
from tests.faults.saga_world import World, world_for
from tests.identity import ADMIN
from tests.stack import eventually

CAPACITY = 10
STUDENTS = 100
__all__ = ["world_for"]  # the fixture
BUDGET_S = 45  # to place every reservation; settling has its own bound


def test_a_hundred_purchases_into_ten_seats_never_oversell_and_match_the_ledger(
    world_for: Any,
    migrated: tuple[str, str],
) -> None:
    world: World = world_for(
        "club-saga-hundred-",
        CLUB_HOLD_SECONDS="2",
        CLUB_SAGA_WEBHOOK_GRACE_SECONDS="1.5",
    )
    world.start("api", "relay", "payment")
    world.knobs(
        decline_rate=0.25,
        decline_every=4,  # random declines, and some a run can count on
        drop_rate=0.15,
        latency_ms=40,
        webhook_delay_ms=1700,
        rate_limit_per_s=1000,
    )
    world.start("saga")
    lesson_id = world.lesson(capacity=CAPACITY)
    watched = watch_seats(world, lesson_id)
    purchases = place_reservations(world, lesson_id)
    settled = settle(world, purchases)
    watched.stop.set()
    watched.thread.join(10)

    assert len(purchases) >= CAPACITY, "the faults left too few reservations to judge"
    assert watched.most <= CAPACITY, f"{watched.most} seats held + taken over HTTP"
    assert_capacity_in_history(migrated[0], UUID(lesson_id))
    ledger = world.ledger()
    statuses = [view["status"] for view in settled.values()]
    for purchase_id, view in settled.items():
        assert_matches_ledger(view, ledger.get(f"purchase-{purchase_id}"))
    ours = {f"purchase-{pid}" for pid in settled}
    for key, payment in ledger.items():
        if key in ours and payment["status"] == "captured":
            view = settled[key.removeprefix("purchase-")]
            assert view["status"] in ("confirmed", "refunded"), (view, payment)
    held, taken = world.lesson_seats(lesson_id)
    assert held == 0
    assert taken == statuses.count("confirmed") <= CAPACITY
    # The knobs did their work: declines (every 4th charge at least, beside the
    # random quarter: ten seats take more than four charges) and confirmations come
    # every run. A
    # refund needs a capture that lands after its hold ran out, which these timings
    # produce in most runs but not all (1 run in 3 here had none); the late capture
    # is refunded exactly once deterministically in test_saga_faults.py, and above
    # every captured payment here was confirmed or refunded.
    assert {"declined", "confirmed"} <= set(statuses), statuses


class Watch:
    def __init__(self) -> None:
        self.most = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: None)


def watch_seats(world: World, lesson_id: str) -> Watch:
    watch = Watch()

    def run() -> None:
        with httpx.Client(base_url=world.base, timeout=10, headers=ADMIN) as client:
            while not watch.stop.wait(0.05):
                body = client.get(f"/lessons/{lesson_id}").json()
                watch.most = max(watch.most, body["seats_held"] + body["seats_taken"])

    watch.thread = threading.Thread(target=run, daemon=True)
    watch.thread.start()
    return watch


def place_reservations(world: World, lesson_id: str) -> list[str]:
    """Each student tries until they hold a seat or every seat is taken for good."""
    placed: list[str] = []
    queue = list(range(STUDENTS))
    lock = threading.Lock()
    deadline = time.monotonic() + BUDGET_S

    def student_loop() -> None:
        while time.monotonic() < deadline:
            with lock:
                if not queue:
                    return
                queue.pop()
            while time.monotonic() < deadline:
                answer = world.reserve(lesson_id)
                if answer.status_code == 201:
                    with lock:
                        placed.append(answer.json()["purchase_id"])
                    break
                assert answer.status_code == 409, answer.text  # full for now
                if world.lesson_seats(lesson_id)[1] >= CAPACITY:
                    return  # every seat is taken for good: nobody else gets one
                time.sleep(0.2)

    threads = [threading.Thread(target=student_loop) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BUDGET_S + 30)
    return placed


def settle(world: World, purchases: list[str]) -> dict[str, dict[str, Any]]:
    """Every purchase's final view, once none is moving any more."""

    def final(view: dict[str, Any]) -> bool:
        if view["status"] == "expired":
            return not view["payment_open"]
        return view["status"] in ("confirmed", "declined", "refunded", "manual_review")

    def all_settled() -> dict[str, dict[str, Any]] | None:
        views = {pid: world.view(pid) for pid in purchases}
        return views if all(final(v) for v in views.values()) else None

    views: dict[str, dict[str, Any]] = eventually(all_settled, timeout=60, interval=1)
    return views


def assert_matches_ledger(view: dict[str, Any], payment: dict[str, Any] | None) -> None:
    status = view["status"]
    assert status != "manual_review", view
    if status == "confirmed":
        assert payment is not None, view
        assert (payment["status"], payment["refunds"]) == ("captured", []), payment
        assert payment["amount_cents"] == view["price_cents"]
        assert view["payment_id"] == payment["id"]
        assert view["enrollment_id"] is not None
    elif status == "refunded":
        assert payment is not None, view
        assert payment["status"] == "captured", payment
        assert len(payment["refunds"]) == 1, payment
        assert payment["refunded_cents"] == payment["amount_cents"]
        assert view["payment_id"] == payment["id"]
    elif status == "declined":
        assert payment is not None, view
        assert payment["status"] == "declined", (view, payment)
    else:  # expired, nothing open: nothing was taken
        assert status == "expired", view
        assert payment is None or payment["status"] == "declined", (view, payment)


def assert_capacity_in_history(database_url: str, lesson_id: UUID) -> None:
    """Every version of the lesson ever saved: held + taken within capacity."""
    container = bootstrap.build(database_url, pool_size=1)
    try:
        newest = container.app.get_lesson(lesson_id).version
        for version in range(1, newest + 1):
            lesson = container.app.repository.get(lesson_id, version=version)
            assert isinstance(lesson, Lesson)
            assert lesson.seats_taken + lesson.seats_held <= lesson.capacity, version
    finally:
        container.close()
