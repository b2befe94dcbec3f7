"""The hand-written to_data/from_data pairs the event contracts had before msgspec
(issue #10), kept here only as bench/codecs.py's baseline: the same per-version
Python the relay and the consumers ran, so "before" is measured, not remembered."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from application.contracts import events as ev
from application.contracts import purchase_events as pe

Data = dict[str, Any]


def _time(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("a published time must be time-zone aware")
    return moment.isoformat().replace("+00:00", "Z")


def _read_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _enrollment_to(e: Any) -> Data:
    return {"enrollment_id": str(e.enrollment_id), "lesson_id": str(e.lesson_id),
            "student_id": e.student_id}  # fmt: skip


def _enrollment_from(cls: Any) -> Callable[[Data], Any]:
    return lambda d: cls(enrollment_id=UUID(d["enrollment_id"]),
                         lesson_id=UUID(d["lesson_id"]),
                         student_id=str(d["student_id"]))  # fmt: skip


def _confirmed_v2_from(d: Data) -> ev.EnrollmentConfirmedV2:
    starts = d["lesson_starts_at"]
    return ev.EnrollmentConfirmedV2(
        enrollment_id=UUID(d["enrollment_id"]), lesson_id=UUID(d["lesson_id"]),
        student_id=str(d["student_id"]),
        lesson_starts_at=None if starts is None else _read_time(starts),
    )  # fmt: skip


def _confirmed_v2_to(e: ev.EnrollmentConfirmedV2) -> Data:
    starts = e.lesson_starts_at
    return _enrollment_to(e) | {
        "lesson_starts_at": None if starts is None else _time(starts)
    }


# class -> (to_data, from_data), as each class's two methods were written.
CODEC: dict[type[Any], tuple[Callable[[Any], Data], Callable[[Data], Any]]] = {
    ev.LessonScheduledV1: (
        lambda e: {"lesson_id": str(e.lesson_id), "title": e.title,
                   "capacity": e.capacity, "starts_at": _time(e.starts_at),
                   "price_cents": e.price_cents},
        lambda d: ev.LessonScheduledV1(
            lesson_id=UUID(d["lesson_id"]), title=str(d["title"]),
            capacity=int(d["capacity"]), starts_at=_read_time(d["starts_at"]),
            price_cents=int(d["price_cents"])),
    ),
    ev.EnrollmentConfirmedV1: (
        _enrollment_to, _enrollment_from(ev.EnrollmentConfirmedV1)),
    ev.EnrollmentConfirmedV2: (_confirmed_v2_to, _confirmed_v2_from),
    ev.EnrollmentCancelledV1: (
        _enrollment_to, _enrollment_from(ev.EnrollmentCancelledV1)),
    ev.ExportRequestedV1: (
        lambda e: {"export_id": str(e.export_id), "lesson_id": str(e.lesson_id),
                   "lesson_version": e.lesson_version,
                   "requested_at": _time(e.requested_at)},
        lambda d: ev.ExportRequestedV1(
            export_id=UUID(d["export_id"]), lesson_id=UUID(d["lesson_id"]),
            lesson_version=int(d["lesson_version"]),
            requested_at=_read_time(d["requested_at"])),
    ),
    pe.PurchaseReservedV1: (
        lambda e: {"purchase_id": str(e.purchase_id), "lesson_id": str(e.lesson_id),
                   "student_id": e.student_id, "price_cents": e.price_cents,
                   "hold_expires_at": _time(e.hold_expires_at)},
        lambda d: pe.PurchaseReservedV1(
            purchase_id=UUID(d["purchase_id"]), lesson_id=UUID(d["lesson_id"]),
            student_id=str(d["student_id"]), price_cents=int(d["price_cents"]),
            hold_expires_at=_read_time(d["hold_expires_at"])),
    ),
    pe.PaymentCapturedV1: (
        lambda e: {"purchase_id": str(e.purchase_id), "payment_id": e.payment_id,
                   "amount_cents": e.amount_cents},
        lambda d: pe.PaymentCapturedV1(
            purchase_id=UUID(d["purchase_id"]), payment_id=str(d["payment_id"]),
            amount_cents=int(d["amount_cents"])),
    ),
    pe.PurchaseConfirmedV1: (
        lambda e: {"purchase_id": str(e.purchase_id),
                   "enrollment_id": str(e.enrollment_id)},
        lambda d: pe.PurchaseConfirmedV1(
            purchase_id=UUID(d["purchase_id"]),
            enrollment_id=UUID(d["enrollment_id"])),
    ),
    pe.HoldExpiredV1: (
        lambda e: {"purchase_id": str(e.purchase_id)},
        lambda d: pe.HoldExpiredV1(purchase_id=UUID(d["purchase_id"])),
    ),
    pe.RefundRequestedV1: (
        lambda e: {"purchase_id": str(e.purchase_id), "amount_cents": e.amount_cents},
        lambda d: pe.RefundRequestedV1(
            purchase_id=UUID(d["purchase_id"]), amount_cents=int(d["amount_cents"])),
    ),
    pe.RefundedV1: (
        lambda e: {"purchase_id": str(e.purchase_id), "refund_id": e.refund_id},
        lambda d: pe.RefundedV1(
            purchase_id=UUID(d["purchase_id"]), refund_id=str(d["refund_id"])),
    ),
    pe.ManualReviewRequiredV1: (
        lambda e: {"purchase_id": str(e.purchase_id)},
        lambda d: pe.ManualReviewRequiredV1(purchase_id=UUID(d["purchase_id"])),
    ),
    pe.AlternativeOfferedV1: (
        lambda e: {"purchase_id": str(e.purchase_id),
                   "offer_expires_at": _time(e.offer_expires_at)},
        lambda d: pe.AlternativeOfferedV1(
            purchase_id=UUID(d["purchase_id"]),
            offer_expires_at=_read_time(d["offer_expires_at"])),
    ),
}  # fmt: skip


def to_data(event: Any) -> Data:
    return CODEC[type(event)][0](event)


def structure(data: Data, cls: type[Any]) -> Any:
    return CODEC[cls][1](data)
