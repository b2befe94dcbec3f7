"""Cancelling a bought seat, through the real saga and the payment sandbox
(docs/decisions/2026-12-02-cancelling-a-bought-seat.md): the seat is released and
the money refunded once; buying again is a new purchase and a new charge."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api_client import ClubClient
from tests.faults.saga_world import World, world_for
from tests.faults.test_saga_faults import assert_refunded_once
from tests.identity import as_student

__all__ = ["world_for"]


def cancel(world: World, enrollment_id: str, student_id: str) -> httpx.Response:
    return httpx.post(
        f"{world.base}/enrollments/{enrollment_id}/cancel",
        headers=as_student(student_id),
    )


def test_a_cancelled_bought_seat_is_refunded_once_and_a_new_purchase_charges_anew(
    world_for: Any,
) -> None:
    world: World = world_for("club-saga-cancel-", CLUB_HOLD_SECONDS="60")
    world.start("api", "relay", "payment", "saga")
    lesson_id = world.lesson()
    with ClubClient(world.base) as club:
        student_id = club.student()
        first = club.reserve(lesson_id, student_id).json()["purchase_id"]
    bought = world.until(first, "confirmed")
    assert world.lesson_seats(lesson_id) == (0, 1)

    for _ in range(2):  # a repeated cancel is answered alike and refunds nothing more
        answer = cancel(world, bought["enrollment_id"], student_id)
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"] == "cancelled"
    assert world.lesson_seats(lesson_id) == (0, 0)
    world.until(first, "refunded")
    assert_refunded_once(world, first)

    with ClubClient(world.base) as club:
        again = club.reserve(lesson_id, student_id)
    assert again.status_code == 201, again.text
    second = again.json()["purchase_id"]
    assert second != first
    world.until(second, "confirmed")
    assert world.lesson_seats(lesson_id) == (0, 1)
    payment = world.payment_of(second)
    assert payment is not None
    assert (payment["status"], payment["refunds"]) == ("captured", [])
    assert_refunded_once(world, first)  # the first payment's refund is still one
