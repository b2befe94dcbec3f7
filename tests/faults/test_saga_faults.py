"""The purchase saga's four named faults (docs/background.md §36), with real processes.

api, relay, saga and the payment sandbox run as processes; a saga is SIGKILLed at a
crash point, or SIGSTOPped past its claim's lease while another one takes over, and
the provider misbehaves through its knobs. Every test ends by comparing Club's
purchases with the provider's own ledger (`GET /payments`): money moved exactly as
many times as Club says.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from tests.faults.saga_world import World, world_for
from tests.stack import eventually

__all__ = ["world_for"]  # the fixture, shared with test_saga_capacity


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


def test_a_saga_killed_before_writing_the_next_deadline_is_taken_over_after_its_lease(
    world_for: Any,
) -> None:
    """saga.after_step: the purchase advanced, its row still claimed by the dead."""
    world: World = world_for("club-saga-crash-step-", CLUB_HOLD_SECONDS="60")
    world.start("api", "relay", "payment")
    world.start("saga", CLUB_CRASH_AT="saga.after_step")
    lesson_id = world.lesson()
    purchase_id = world.purchase(lesson_id)
    assert world.stack.died("saga", timeout=30) == -signal.SIGKILL
    world.start("saga")
    world.until(purchase_id, "confirmed")  # after the 3 s lease ran out
    assert world.lesson_seats(lesson_id) == (0, 1)
    payment = world.payment_of(purchase_id)
    assert payment is not None
    assert (payment["status"], payment["refunds"]) == ("captured", [])
