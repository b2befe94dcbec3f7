"""A purchase saga on one Club application, with a fake provider and a clock.

`restarted()` re-creates the application from the same stored events, as a saga
process that was killed and started again would find them: no state survives in
memory, only what was recorded.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import EnvType

from application.club import ClubApplication
from application.commands import ScheduleLesson
from application.saga import SagaPolicy
from application.saga_runner import PurchaseSaga
from domain.purchase import Purchase
from tests.unit.fake_payment import FakePaymentProvider, Fault

START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HOLD_SECONDS = 900


class World:
    def __init__(
        self,
        app: ClubApplication | None = None,
        *,
        policy: SagaPolicy | None = None,
        env: EnvType | None = None,
    ) -> None:
        self.app = app or ClubApplication(env=env)
        self.provider = FakePaymentProvider()
        self.policy = policy or SagaPolicy()
        self.now = START
        self.rng = random.Random(7)
        self._bind()

    def _bind(self) -> None:
        self.purchases = self.app  # the purchase's use cases are the app's methods
        self.saga = PurchaseSaga(
            purchases=self.purchases,
            provider=self.provider,
            policy=self.policy,
            rng=self.rng,
        )

    def lesson(self, *, capacity: int = 1, price_cents: int = 2500) -> UUID:
        return self.app.schedule_lesson(
            ScheduleLesson(
                lesson_id=uuid4(),
                title="Intensive",
                capacity=capacity,
                starts_at=datetime(2026, 12, 24, 10, 0, tzinfo=UTC),
                price_cents=price_cents,
            )
        )

    def reserve(self, lesson_id: UUID, student_id: str, key: str = "") -> UUID:
        view = self.purchases.reserve_purchase(
            lesson_id=lesson_id,
            student_id=student_id,
            request_id=key or f"key-{student_id}-{uuid4()}",
            now=self.now,
            hold_seconds=HOLD_SECONDS,
        )
        return view.purchase_id

    def sold_elsewhere(self, lesson_id: UUID, student_id: str) -> None:
        """Someone else's purchase takes the seat (its payment is not ours to
        follow): a hold converted into a seat, as a confirmed purchase leaves it."""
        lesson = self.app.get_lesson(lesson_id)
        sale = uuid4()
        lesson.hold_seat(purchase_id=sale, student_id=student_id, until=self.now)
        lesson.convert_hold(purchase_id=sale, enrollment_id=uuid4())
        self.app.save(lesson)

    def advance(self, purchase_id: UUID, by: timedelta = timedelta(0)) -> None:
        self.now += by
        self.saga.advance(purchase_id, self.now)

    def charged_with(self, fault: Fault) -> UUID:
        """Ann's purchase of a seat in a new lesson, its first charge met by `fault`."""
        purchase_id = self.reserve(self.lesson(), "ann")
        self.provider.next_charge_fault = fault
        self.advance(purchase_id)
        return purchase_id

    def get(self, purchase_id: UUID) -> Purchase:
        return self.purchases.get_purchase(purchase_id)

    def webhook_captured(self, purchase_id: UUID) -> None:
        """What the webhook route records: a fact, nothing decided."""
        charge = self.provider.charges[self.get(purchase_id).payment_key]
        self.purchases.record_payment_captured(
            purchase_id, payment_id=charge.payment_id, amount_cents=charge.amount_cents
        )

    def restarted(self) -> None:
        """A new application (and saga) reading the same stored events."""
        stored = self.app.recorder.select_notifications(start=1, limit=10**9)
        self.app = ClubApplication()
        self.app.recorder.insert_events(
            [
                StoredEvent(
                    originator_id=n.originator_id,
                    originator_version=n.originator_version,
                    topic=n.topic,
                    state=n.state,
                )
                for n in stored
            ]
        )
        self._bind()
