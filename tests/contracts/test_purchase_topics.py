"""The purchase's and the holds' stored topics are pinned: a rename orphans them."""

from __future__ import annotations

from domain.lesson import Lesson
from domain.purchase import Purchase


def test_hold_and_purchase_topics_are_pinned() -> None:
    classes = [Lesson.SeatHeld, Lesson.HoldReleased, Lesson.HoldConverted] + [
        value
        for name, value in vars(Purchase).items()
        if isinstance(value, type)
        and issubclass(value, Purchase.Event)
        and name not in {"Event", "Created"}  # the library's bases, never stored
    ]
    topics = {f"{cls.__module__}:{cls.__qualname__}" for cls in classes}
    assert topics == {
        "domain.lesson:Lesson.SeatHeld",
        "domain.lesson:Lesson.HoldReleased",
        "domain.lesson:Lesson.HoldConverted",
        *(
            f"domain.purchase:Purchase.{name}"
            for name in [
                "Reserved", "PaymentRequested", "PaymentOutcomeUnknown",
                "PaymentCheckScheduled", "PaymentFoundPending", "PaymentNotTaken",
                "PaymentDeclined",
                "PaymentCaptured", "PaymentTransferred", "HoldExpired",
                "AccessGranted", "AlternativeOffered", "AlternativeAccepted",
                "RefundRequested", "RefundAccepted", "RefundRetryScheduled",
                "Refunded", "ManualReviewRequired", "ReviewResolved",
            ]
        ),
    }  # fmt: skip
