"""A payment provider that answers hostile payment ids, through the real saga
(the sandbox's `hostile_id_length` knob): an id Club can store and send back is
refunded once under a valid key; one it cannot goes to a person with the reason,
and no step fails and retries meanwhile."""

from __future__ import annotations

import time
from typing import Any

from tests.faults.saga_world import World, world_for
from tests.faults.test_saga_faults import assert_refunded_once, late_world

__all__ = ["world_for"]


def test_a_late_capture_with_spaces_and_accents_in_its_id_is_refunded_once(
    world_for: Any,
) -> None:
    world = late_world(world_for, "club-saga-hostile-id-")
    world.knobs(hostile_id_length=249)  # a space, "ü" and "é": no valid key part
    world.start("saga")
    purchase_id = world.purchase(world.lesson())
    world.until(purchase_id, "refunded")
    payment = world.payment_of(purchase_id)
    assert payment is not None
    assert len(payment["id"]) == 249
    assert " " in payment["id"]
    assert world.view(purchase_id)["payment_id"] == payment["id"]
    [refund] = payment["refunds"]
    assert refund["idempotency_key"].startswith("refund-sha256-")
    time.sleep(1)  # the delayed webhook and its copies land: still one refund
    assert_refunded_once(world, purchase_id)
    assert b"saga.step_failed" not in world.stack.logs["saga"].read_bytes()


def test_a_payment_id_club_cannot_use_sends_the_purchase_to_review(
    world_for: Any,
) -> None:
    world: World = world_for("club-saga-unusable-id-", CLUB_HOLD_SECONDS="60")
    world.start("api", "relay", "payment")
    world.knobs(hostile_id_length=300)
    world.start("saga")
    lesson_id = world.lesson()
    purchase_id = world.purchase(lesson_id)
    review = world.until(purchase_id, "manual_review")
    assert "payment id has 300 characters" in review["review_reason"]
    assert review["review_owner"] == "payments on-call"
    assert review["payment_id"] is None  # nothing stored as it came
    assert world.lesson_seats(lesson_id) == (1, 0)  # held for the person
    time.sleep(2)  # the webhook (the same id) arrives: it changes nothing more
    after = world.view(purchase_id)
    assert (after["status"], after["review_reason"]) == (
        "manual_review",
        review["review_reason"],
    )
    assert b"saga.step_failed" not in world.stack.logs["saga"].read_bytes()
