"""What the consumer inbox (adapters/postgres/inbox.py) must do; each adapter's test
subclasses `InboxContract` and provides an `inbox` fixture keeping `InboxHarness`.

The inbox has no Protocol in application/ports.py: it runs inside the caller's
transaction, with the effect on the same connection, and PostgreSQL is its only
adapter. The harness is that seam: apply a batch in one transaction (the effect
records the event ids it saw), read back what committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol
from uuid import UUID, uuid4

import pytest

from adapters.postgres.inbox import Applied, Delivery
from application.contracts.envelope import Envelope


class EffectFailedError(Exception):
    """Raised by the harness's effect when asked to: the transaction must roll back."""


class InboxHarness(Protocol):
    def apply(
        self,
        consumer: str,
        batch: Sequence[Delivery],
        *,
        position: int = 0,
        fail: bool = False,
    ) -> Applied:
        """One transaction: inbox rows, the effect (raising EffectFailedError after it
        wrote, if `fail`) and the consumer's position."""
        ...

    def isolated(
        self, consumer: str, batch: Sequence[Delivery], poison: UUID
    ) -> Applied:
        """One transaction, each delivery alone; the effect fails on `poison`."""
        ...

    def effects(self, consumer: str) -> list[UUID]:
        """The event ids whose effect committed, in order."""
        ...

    def position(self, consumer: str) -> int | None: ...


def delivery(
    event_id: UUID | None = None, *, digest: bytes = b"meaning-1", seq: int = 1
) -> Delivery:
    envelope = Envelope(
        event_id=event_id or uuid4(),
        type="HoldExpired",
        schema_version=1,
        aggregate="purchase",
        aggregate_id=uuid4(),
        aggregate_version=1,
        occurred_at=datetime.now(UTC),
        data={"purchase_id": str(uuid4())},
    )
    return Delivery(envelope, digest, seq)


class InboxContract:
    """Not collected itself (no `Test` prefix); subclasses provide `inbox`."""

    @pytest.fixture
    def consumer(self) -> str:
        return f"contract-{uuid4()}"

    def test_first_sight_is_recorded_and_applied(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        first = delivery()
        outcome = inbox.apply(consumer, [first])
        assert (outcome.applied, outcome.duplicates, outcome.conflicts) == (1, 0, [])
        assert inbox.effects(consumer) == [first.envelope.event_id]

    def test_the_same_event_again_is_a_duplicate_without_effect(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        first = delivery()
        inbox.apply(consumer, [first])
        again = delivery(first.envelope.event_id, seq=2)  # a redelivery or republish
        outcome = inbox.apply(consumer, [again])
        assert (outcome.applied, outcome.duplicates, outcome.conflicts) == (0, 1, [])
        assert inbox.effects(consumer) == [first.envelope.event_id]

    def test_a_repeat_inside_one_batch_is_applied_once(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        first = delivery()
        redelivered = delivery(first.envelope.event_id, seq=2)
        outcome = inbox.apply(consumer, [first, redelivered])
        assert (outcome.applied, outcome.duplicates) == (1, 1)
        assert inbox.effects(consumer) == [first.envelope.event_id]

    def test_the_same_id_with_another_meaning_is_a_conflict(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        first = delivery()
        inbox.apply(consumer, [first])
        forged = delivery(first.envelope.event_id, digest=b"meaning-2", seq=2)
        outcome = inbox.apply(consumer, [delivery(), forged])
        assert outcome.conflicts == [1]
        assert first.envelope.event_id in inbox.effects(consumer)
        assert len(inbox.effects(consumer)) == 2  # the other event still applied

    def test_a_row_written_with_the_body_digest_still_recognises_a_redelivery(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        """Rows from before the meaning digests hold the body's sha256."""
        old = delivery(digest=b"body-sha256")
        inbox.apply(consumer, [old])
        now = Delivery(old.envelope, b"meaning-1", 2, body_digest=b"body-sha256")
        assert inbox.apply(consumer, [now]).duplicates == 1

    def test_the_record_and_the_effect_roll_back_together(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        first = delivery()
        with pytest.raises(EffectFailedError):
            inbox.apply(consumer, [first], position=5, fail=True)
        assert inbox.effects(consumer) == []
        assert inbox.position(consumer) is None
        outcome = inbox.apply(consumer, [first], position=5)  # no row was left
        assert outcome.applied == 1
        assert inbox.effects(consumer) == [first.envelope.event_id]
        assert inbox.position(consumer) == 5

    def test_a_poison_event_rolls_back_alone(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        healthy, poison = delivery(), delivery()
        outcome = inbox.isolated(consumer, [poison, healthy], poison.envelope.event_id)
        assert [index for index, _ in outcome.poisoned] == [0]
        assert outcome.applied == 1
        assert inbox.effects(consumer) == [healthy.envelope.event_id]
        retried = inbox.apply(consumer, [poison])  # it left no inbox row
        assert retried.applied == 1

    def test_positions_are_per_consumer_and_never_move_back(
        self, inbox: InboxHarness, consumer: str
    ) -> None:
        other = f"{consumer}-other"
        shared = delivery()
        inbox.apply(consumer, [shared], position=7)
        inbox.apply(other, [shared], position=3)
        assert (inbox.position(consumer), inbox.position(other)) == (7, 3)
        assert inbox.effects(other) == [shared.envelope.event_id]  # its own inbox
        inbox.apply(consumer, [delivery()], position=4)  # a late, older batch
        assert inbox.position(consumer) == 7
