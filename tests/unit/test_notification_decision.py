"""The notification job's choices as a table: (state, answer) -> (record, action).

`decide` is pure, so each row is one call: what the delivery knows, what the last
call answered, the state it records and what it does next. The Notifier's own
tests (test_notifier.py) run the same choices through the shell."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from application.email import DeliveryStatus
from application.notification_decision import (
    Accepted,
    Ack,
    Action,
    Claim,
    Claimed,
    DeadLetter,
    Delivery,
    Failed,
    Heard,
    LookUp,
    LookupFailed,
    LookUpLater,
    Lost,
    Mark,
    Read,
    Refused,
    RetryLater,
    SeenBefore,
    Send,
    Start,
    State,
    decide,
)

MAX = 3  # max_attempts in every row
NO_PROFILE = "student ann has no profile to write to"
NO_LOOKUP = "outcome unknown and the provider offers no status lookup"


def seen(
    recorded: State | None = None,
    attempts: int = 0,
    *,
    replayed: bool = False,
    profile: bool = True,
    last_error: str | None = None,
) -> Delivery:
    return Delivery(
        student_id="ann",
        has_profile=profile,
        replayed=replayed,
        recorded=recorded,
        attempts=attempts,
        last_error=last_error,
    )


def mark(
    state: State,
    *,
    attempts: int | None = None,
    error: str | None = None,
    provider_id: str | None = None,
) -> Mark:
    return Mark(state=state, attempts=attempts, error=error, provider_id=provider_id)


UNREAD = seen()
PENDING = seen(State.PENDING)
SENDING_1 = seen(State.SENDING, 1)
SENDING_3 = seen(State.SENDING, 3)
UNKNOWN_1 = seen(State.UNKNOWN, 1)
UNKNOWN_2 = seen(State.UNKNOWN, 2)
FAILED_1 = seen(State.FAILED, 1)
SENT = seen(State.SENT, 1)
DEAD = seen(State.DEAD_LETTERED, 3, last_error="550 refused")
REPLAYED_DEAD = seen(State.DEAD_LETTERED, 3, replayed=True, last_error="550 refused")
REPLAYED_FAILED = seen(State.FAILED, 2, replayed=True)
DL = State.DEAD_LETTERED

TABLE = [
    # -- first look: nothing asked yet ----------------------------------------
    pytest.param(UNREAD, Start(), None, Claim(), id="first sight: claim it sending"),
    pytest.param(
        seen(profile=False), Start(), None, Read(), id="first sight, no profile: read"
    ),
    pytest.param(
        PENDING,
        Start(),
        mark(State.SENDING, attempts=1),
        Send(1),
        id="pending: send attempt 1",
    ),
    pytest.param(
        seen(State.PENDING, profile=False),
        Start(),
        mark(DL, error=NO_PROFILE),
        DeadLetter(NO_PROFILE),
        id="pending, no profile: dead-letter",
    ),
    pytest.param(
        SENDING_1, Start(), None, LookUp(), id="sending on redelivery: look up"
    ),
    pytest.param(UNKNOWN_2, Start(), None, LookUp(), id="unknown: look up"),
    pytest.param(
        FAILED_1,
        Start(),
        mark(State.SENDING, attempts=2),
        Send(2),
        id="failed: send the next attempt",
    ),
    pytest.param(
        seen(State.FAILED, 1, profile=False),
        Start(),
        mark(DL, error=NO_PROFILE),
        DeadLetter(NO_PROFILE),
        id="failed, no profile: dead-letter",
    ),
    pytest.param(SENT, Start(), None, Ack(), id="sent: duplicate, ack unsent"),
    pytest.param(
        seen(State.SENT, 1, replayed=True),
        Start(),
        None,
        Ack(),
        id="sent, replayed: ack unsent",
    ),
    pytest.param(
        DEAD,
        Start(),
        None,
        DeadLetter("550 refused"),
        id="dead-lettered: dead-letter again, same reason",
    ),
    pytest.param(
        seen(DL, 3),
        Start(),
        None,
        DeadLetter("dead-lettered before"),
        id="dead-lettered without a reason",
    ),
    pytest.param(
        REPLAYED_DEAD, Start(), None, LookUp(), id="replayed dead letter: look up"
    ),
    pytest.param(
        REPLAYED_FAILED, Start(), None, LookUp(), id="replayed failed: look up"
    ),
    pytest.param(
        seen(State.PENDING, replayed=True),
        Start(),
        None,
        LookUp(),
        id="replayed pending: look up",
    ),
    # -- the store's answer to a first sight's claim --------------------------
    pytest.param(UNREAD, Claimed(), None, Send(1), id="claimed: send attempt 1"),
    pytest.param(
        seen(profile=False),
        Claimed(),
        mark(DL, error=NO_PROFILE),
        DeadLetter(NO_PROFILE),
        id="claimed, no profile (never claimed so): dead-letter",
    ),
    pytest.param(UNREAD, SeenBefore(), None, Read(), id="seen before: read the row"),
    # -- the provider's answer to a status lookup -----------------------------
    pytest.param(
        SENDING_1,
        DeliveryStatus.ACCEPTED,
        mark(State.SENT),
        Ack(),
        id="lookup found it: sent",
    ),
    pytest.param(
        SENDING_1,
        DeliveryStatus.NOT_FOUND,
        mark(State.SENDING, attempts=2),
        Send(2),
        id="lookup found nothing: send the next attempt",
    ),
    pytest.param(
        seen(State.UNKNOWN, 1, profile=False),
        DeliveryStatus.NOT_FOUND,
        mark(DL, error=NO_PROFILE),
        DeadLetter(NO_PROFILE),
        id="lookup found nothing, no profile: dead-letter",
    ),
    pytest.param(
        UNKNOWN_1,
        DeliveryStatus.UNKNOWN,
        mark(DL, error=NO_LOOKUP),
        DeadLetter(NO_LOOKUP),
        id="no status lookup (SMTP): a person decides",
    ),
    pytest.param(
        REPLAYED_DEAD,
        DeliveryStatus.ACCEPTED,
        mark(State.SENT),
        Ack(),
        id="replay, lookup found it: sent, not resent",
    ),
    pytest.param(
        REPLAYED_DEAD,
        DeliveryStatus.NOT_FOUND,
        mark(State.SENDING, attempts=1),
        Send(1),
        id="replay, lookup found nothing: attempt 1 afresh",
    ),
    pytest.param(
        REPLAYED_DEAD,
        DeliveryStatus.UNKNOWN,
        mark(State.SENDING, attempts=1),
        Send(1),
        id="replay, no status lookup: a person chose to send",
    ),
    pytest.param(
        UNKNOWN_1,
        LookupFailed("status: ReadTimeout", 5.0),
        mark(State.UNKNOWN, attempts=2, error="status: ReadTimeout"),
        RetryLater(2, 5.0, "status: ReadTimeout"),
        id="lookup failed: counted, retried",
    ),
    pytest.param(
        UNKNOWN_2,
        LookupFailed("status: ReadTimeout"),
        mark(
            DL,
            attempts=3,
            error="outcome unknown, 3 status lookups failed: status: ReadTimeout",
        ),
        DeadLetter("outcome unknown, 3 status lookups failed: status: ReadTimeout"),
        id="lookup failed, out of attempts: dead-letter",
    ),
    pytest.param(
        REPLAYED_FAILED,
        LookupFailed("status: 503"),
        mark(State.UNKNOWN, attempts=1, error="status: 503"),
        RetryLater(1, None, "status: 503"),
        id="replay, lookup failed: counted from 1",
    ),
    # -- the provider's answer to a send --------------------------------------
    pytest.param(
        SENDING_1,
        Accepted("m-1"),
        mark(State.SENT, provider_id="m-1"),
        Ack(),
        id="accepted: sent",
    ),
    pytest.param(
        SENDING_1,
        Refused("400 address refused"),
        mark(DL, error="400 address refused"),
        DeadLetter("permanent: 400 address refused"),
        id="refused for good: dead-letter at once",
    ),
    pytest.param(
        SENDING_1,
        Failed("429", 30.0),
        mark(State.FAILED, error="429"),
        RetryLater(1, 30.0, "429"),
        id="transient: failed, retried with the attempt",
    ),
    pytest.param(
        SENDING_3,
        Failed("503"),
        mark(DL, error="gave up after 3 attempts: 503"),
        DeadLetter("gave up after 3 attempts: 503"),
        id="transient, out of attempts: dead-letter",
    ),
    pytest.param(
        SENDING_1,
        Lost("read timeout"),
        mark(State.UNKNOWN, error="read timeout"),
        LookUpLater("read timeout"),
        id="no answer: unknown, looked up later",
    ),
    pytest.param(
        SENDING_3,
        Lost("read timeout"),
        mark(DL, error="outcome unknown after 3 attempts: read timeout"),
        DeadLetter("outcome unknown after 3 attempts: read timeout"),
        id="no answer, out of attempts: dead-letter",
    ),
]


@pytest.mark.parametrize(("delivery", "heard", "record", "action"), TABLE)
def test_each_choice(
    delivery: Delivery, heard: Heard, record: Mark | None, action: Action
) -> None:
    decision = decide(delivery, heard, max_attempts=MAX)
    assert (decision.record, decision.action) == (record, action)


def test_a_claim_leaves_the_row_sending_at_attempt_1() -> None:
    """The claim wrote it: nothing more to record, and the send's answer counts
    as attempt 1."""
    after = decide(UNREAD, Claimed(), max_attempts=MAX).after
    assert (after.recorded, after.attempts) == (State.SENDING, 1)
    failed = decide(after, Failed("503"), max_attempts=MAX)
    assert failed.action == RetryLater(1, None, "503")


def test_a_whole_delivery_walks_the_states() -> None:
    """Lost answer, then the next delivery: looked up, found nothing, sent again."""
    first = decide(SENDING_1, Lost("read timeout"), max_attempts=MAX).after
    assert (first.recorded, first.attempts, first.last_error) == (
        State.UNKNOWN,
        1,
        "read timeout",
    )
    assert decide(first, Start(), max_attempts=MAX).action == LookUp()
    resend = decide(first, DeliveryStatus.NOT_FOUND, max_attempts=MAX)
    assert resend.action == Send(2)
    done = decide(resend.after, Accepted(None), max_attempts=MAX)
    assert done.after.recorded is State.SENT
    assert done.after.last_error == "read timeout"  # `sent` keeps the row's error


# -- totality --------------------------------------------------------------------

ACTIONS = (Claim, Read, LookUp, Send, Ack, RetryLater, LookUpLater, DeadLetter)
texts = st.text(max_size=20)
delays = st.none() | st.floats(allow_nan=False)
deliveries = st.builds(
    Delivery,
    student_id=texts,
    has_profile=st.booleans(),
    replayed=st.booleans(),
    recorded=st.none() | st.sampled_from(State),
    attempts=st.integers(),
    last_error=st.none() | texts,
)
answers: st.SearchStrategy[Heard] = st.one_of(
    st.just(Start()),
    st.just(Claimed()),
    st.just(SeenBefore()),
    st.builds(Accepted, st.none() | texts),
    st.builds(Refused, texts),
    st.builds(Failed, texts, delays),
    st.builds(Lost, texts),
    st.sampled_from(DeliveryStatus),
    st.builds(LookupFailed, texts, delays),
)


@settings(max_examples=1000)
@given(delivery=deliveries, heard=answers, max_attempts=st.integers(min_value=1))
def test_decide_is_total(delivery: Delivery, heard: Heard, max_attempts: int) -> None:
    """Every (state, answer) pair has a decision: none raises, each names a known
    action, and `after` is the delivery as the store would hold it."""
    decision = decide(delivery, heard, max_attempts=max_attempts)
    assert isinstance(decision.action, ACTIONS)
    record, after = decision.record, decision.after
    if record is not None:
        assert after.recorded is record.state
        known = 1 if isinstance(heard, Claimed) else delivery.attempts  # its write
        assert after.attempts == (known if record.attempts is None else record.attempts)
        if record.state is State.DEAD_LETTERED:
            assert isinstance(decision.action, DeadLetter)
    if isinstance(decision.action, Send):  # only to a student with a profile,
        assert delivery.has_profile  # with `sending` at that attempt recorded
        assert (after.recorded, after.attempts) == (
            State.SENDING,
            decision.action.attempt,
        )
