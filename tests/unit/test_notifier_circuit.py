"""The Notifier and the provider's circuit: what it tells the circuit, and what a
failure met while the circuit is open costs the message (nothing)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.memory.notifications import InMemoryNotificationStore
from adapters.memory.students import InMemoryStudentDirectory
from application.email import PermanentSendError, TransientSendError
from application.notifications import (
    Done,
    GiveUp,
    LessonFacts,
    Notifier,
    Retry,
    RetryPolicy,
    State,
)
from domain.student import StudentProfile
from tests.unit.test_notifier import KnownPurchases, ScriptedProvider, fail, request

pytestmark = pytest.mark.unit

POLICY = RetryPolicy(max_attempts=3, first_delay=1.0, max_delay=8.0, provider_wait=7.0)


class CountingCircuit:
    """Opens at the `opens_at`-th failure, as the shared row would."""

    def __init__(self, opens_at: int) -> None:
        self.opens_at = opens_at
        self.failures: list[str] = []
        self.answers = 0

    def failed(self, error: str) -> bool:
        self.failures.append(error)
        return len(self.failures) >= self.opens_at

    def answered(self) -> None:
        self.answers += 1


def notifier_with(
    circuit: CountingCircuit,
) -> tuple[Notifier, ScriptedProvider, InMemoryNotificationStore]:
    provider, store = ScriptedProvider(), InMemoryNotificationStore()
    students = InMemoryStudentDirectory()
    students.save(StudentProfile.create(student_id="ann", email="a@b.org", name="Ann"))
    notifier = Notifier(
        store=store,
        provider=provider,
        students=students,
        lessons=lambda _: LessonFacts(
            title="Yoga", starts_at=datetime(2026, 12, 1, 10, tzinfo=UTC)
        ),
        purchases=KnownPurchases(),
        policy=POLICY,
        circuit=circuit,
    )
    return notifier, provider, store


def test_a_failure_while_open_waits_for_the_provider_and_spends_nothing() -> None:
    circuit = CountingCircuit(opens_at=1)
    notifier, provider, store = notifier_with(circuit)
    asked = request()
    provider.script = [fail(TransientSendError("provider answered 503"))] * 5
    for _ in range(5):  # five outages in a row: never the DLQ, no attempt spent
        outcome = notifier.handle(asked)
        assert outcome == Retry(7.0, "provider down: provider answered 503")
        row = store.rows[asked.event_id]
        assert (row.state, row.attempts) == (State.FAILED, 0)
    assert notifier.handle(asked) == Done()
    assert store.rows[asked.event_id].attempts == 1  # the send that got through
    assert circuit.answers == 1


def test_a_429_is_the_provider_answering_not_an_outage() -> None:
    circuit = CountingCircuit(opens_at=1)
    notifier, provider, _store = notifier_with(circuit)
    provider.script = [fail(TransientSendError("429", 2.0, throttled=True))]
    outcome = notifier.handle(request())
    assert isinstance(outcome, Retry)
    assert outcome.delay >= 2.0
    assert circuit.failures == []


def test_a_refusal_of_one_message_is_an_answer_and_goes_to_the_dlq() -> None:
    circuit = CountingCircuit(opens_at=1)
    notifier, provider, _store = notifier_with(circuit)
    provider.script = [fail(PermanentSendError("provider answered 400"))]
    assert isinstance(notifier.handle(request()), GiveUp)
    assert circuit.failures == []
    assert circuit.answers == 1
