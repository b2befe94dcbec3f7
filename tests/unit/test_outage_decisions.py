"""An e-mail's choices while its provider is down, and past its time bound.

Rows of `decide` (application/notification_decision.py) beside the main table in
test_notification_decision.py: a failure the shared circuit counts as everyone's
gives the attempt back and waits for the provider; a resend is refused once the
first send is older than `give_up_after`, whatever the count."""

from __future__ import annotations

import pytest

from application.email import DeliveryStatus
from application.notification_decision import (
    DeadLetter,
    Delivery,
    Failed,
    LookupFailed,
    Mark,
    RetryLater,
    Send,
    Start,
    State,
    WaitForProvider,
    decide,
)

pytestmark = pytest.mark.unit

MAX = 3
HOUR = 3600.0


def seen(
    state: State | None, attempts: int = 0, *, age: float = 0.0, replayed: bool = False
) -> Delivery:
    return Delivery(
        student_id="ann",
        has_profile=True,
        recorded=state,
        attempts=attempts,
        last_error="provider answered 503",
        age_s=age,
        replayed=replayed,
    )


def test_a_send_failed_while_the_provider_is_down_gives_its_attempt_back() -> None:
    step = decide(seen(State.SENDING, 3), Failed("503", down=True), max_attempts=MAX)
    assert step.record == Mark(state=State.FAILED, attempts=2, error="503")
    assert step.action == WaitForProvider("503")  # not the DLQ, at attempt 3 of 3


def test_the_same_failure_with_the_circuit_closed_spends_the_last_attempt() -> None:
    step = decide(seen(State.SENDING, 3), Failed("503"), max_attempts=MAX)
    assert isinstance(step.action, DeadLetter)
    step = decide(seen(State.SENDING, 2), Failed("503"), max_attempts=MAX)
    assert step.action == RetryLater(2, None, "503")


def test_a_lookup_failed_while_the_provider_is_down_is_not_counted() -> None:
    step = decide(
        seen(State.UNKNOWN, 2), LookupFailed("503", down=True), max_attempts=MAX
    )
    assert step.record == Mark(state=State.UNKNOWN, attempts=2, error="503")
    assert step.action == WaitForProvider("503")


def test_no_resend_past_the_time_bound_even_with_attempts_left() -> None:
    step = decide(
        seen(State.FAILED, 1, age=13 * HOUR),
        Start(),
        max_attempts=MAX,
        give_up_after=12 * HOUR,
    )
    assert step.record is not None
    assert step.record.state is State.DEAD_LETTERED
    assert isinstance(step.action, DeadLetter)
    assert "CLUB_NOTIFY_GIVE_UP_AFTER" in step.action.reason


def test_inside_the_time_bound_it_is_sent_again() -> None:
    step = decide(
        seen(State.FAILED, 1, age=11 * HOUR),
        Start(),
        max_attempts=MAX,
        give_up_after=12 * HOUR,
    )
    assert step.action == Send(2)


def test_an_unknown_outcome_past_the_bound_is_looked_up_never_resent() -> None:
    # The key is still known (the bound is under its lifetime): accepted is sent...
    old = seen(State.UNKNOWN, 1, age=13 * HOUR)
    accepted = decide(
        old, DeliveryStatus.ACCEPTED, max_attempts=MAX, give_up_after=12 * HOUR
    )
    assert accepted.record == Mark(state=State.SENT)
    # ...and nothing held under it is dead-lettered, not sent blind.
    missing = decide(
        old, DeliveryStatus.NOT_FOUND, max_attempts=MAX, give_up_after=12 * HOUR
    )
    assert isinstance(missing.action, DeadLetter)


def test_a_replay_is_a_persons_choice_past_the_bound() -> None:
    step = decide(
        seen(State.DEAD_LETTERED, 3, age=13 * HOUR, replayed=True),
        DeliveryStatus.NOT_FOUND,
        max_attempts=MAX,
        give_up_after=12 * HOUR,
    )
    assert step.action == Send(1)
