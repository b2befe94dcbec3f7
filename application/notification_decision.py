"""The notification job's choices, with nothing but data in and out.

`decide(delivery, heard, max_attempts=...)` takes what one delivery of the job knows
so far (the notification's recorded state and attempts, whether an operator
replayed it, whether the student has a profile to write to) and what the last call
answered (the store's claim of a first sight, the provider's send, its status
lookup), and names the state to record and the one thing to do next. It calls
nothing, reads no clock and draws no jitter: `application.notifications.Notifier`
makes the calls, records the states, and turns the last action into the worker's
outcome (the delay of a retry is drawn there, from the attempt named here).

A delivery passes through at most five decisions:

    unread,      Start        -> Claim (a first sight: `sending` in one write) | Read
    unread,      Claimed      -> Send attempt 1 (a claim is made only with a profile)
    unread,      SeenBefore   -> Read (the row says how far it got)
    its row,     Start        -> Ack | DeadLetter | LookUp | Send
    its row,     lookup's     -> Ack | DeadLetter | RetryLater | Send
    `sending`,   send's       -> Ack | DeadLetter | RetryLater | LookUpLater
                                 | WaitForProvider

A failure that the provider's shared circuit counts as everyone's (`down`) spends
no attempt: the message waits for the provider (`WaitForProvider`). A resend is
bounded in time as well as count (`give_up_after`, from the first send).

The row's states:

    pending -> sending -> sent
                       -> unknown  (the request left, no answer came)
                       -> failed   (refused for now; a retry is scheduled)
                       -> dead-lettered (refused for good, or out of attempts)
"""

from __future__ import annotations

import enum
import math

import attrs

from application.email import DeliveryStatus


class State(enum.StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    UNKNOWN = "unknown"
    FAILED = "failed"
    DEAD_LETTERED = "dead-lettered"


@attrs.frozen(kw_only=True)
class Delivery:
    """What one delivery knows of its notification so far."""

    student_id: str
    has_profile: bool  # the student's profile, read at send time, exists
    # An operator replayed it from the DLQ, and this is the replay's first
    # delivery: its count starts afresh (its redeliveries count on).
    replayed: bool = False
    recorded: State | None = None  # None: its row is not read yet
    attempts: int = 0
    last_error: str | None = None
    # Seconds since its row was created, i.e. since the provider first heard its
    # key (the database's clock): no resend past `give_up_after`.
    age_s: float = 0.0


# What the last call answered. A status lookup answers a `DeliveryStatus`.
@attrs.frozen
class Start:
    """Nothing asked yet: decide from what the delivery knows."""


@attrs.frozen
class Claimed:
    """A first sight: the store created its row `sending` at attempt 1."""


@attrs.frozen
class SeenBefore:
    """The store held a row already; nothing was written."""


@attrs.frozen
class Accepted:
    """The provider accepted the message."""

    provider_id: str | None


@attrs.frozen
class Refused:
    """The provider refused it for good (what it said, without the student)."""

    said: str


@attrs.frozen
class Failed:
    """Nothing was accepted, for now; not again before `retry_after` seconds.
    `down`: the provider fails for everyone (its circuit is open): the attempt is
    given back, and the message waits for the provider instead."""

    said: str
    retry_after: float | None = None
    down: bool = False


@attrs.frozen
class Lost:
    """The request left and no answer came: the provider may hold it."""

    said: str


@attrs.frozen
class LookupFailed:
    """The status lookup itself failed: it proves nothing either way."""

    said: str
    retry_after: float | None = None
    down: bool = False  # as `Failed.down`: the lookup is not counted


Heard = (
    Start
    | Claimed
    | SeenBefore
    | Accepted
    | Refused
    | Failed
    | Lost
    | DeliveryStatus
    | LookupFailed
)


# The steps of a delivery.
@attrs.frozen
class Claim:
    """Compose the message, then create the row `sending` at attempt 1 if there
    is none: the common first sight in one write fewer."""


@attrs.frozen
class Read:
    """Read the row (created `pending` if there is none) and decide from it."""


@attrs.frozen
class LookUp:
    """Ask the provider what it holds under the notification's key."""


@attrs.frozen
class Send:
    """Call the provider (`sending` at this attempt is recorded by then)."""

    attempt: int


# Its last step: the worker's outcome.
@attrs.frozen
class Ack:
    """Nothing left to do."""


@attrs.frozen
class RetryLater:
    """NAK with the backoff of this attempt, never shorter than `retry_after`."""

    attempt: int
    retry_after: float | None
    reason: str


@attrs.frozen
class LookUpLater:
    """NAK with the short delay before an unknown outcome is looked up."""

    reason: str


@attrs.frozen
class WaitForProvider:
    """NAK until the provider's next probe: no attempt was spent."""

    reason: str


@attrs.frozen
class DeadLetter:
    reason: str


Action = (
    Claim
    | Read
    | LookUp
    | Send
    | Ack
    | RetryLater
    | LookUpLater
    | WaitForProvider
    | DeadLetter
)


@attrs.frozen(kw_only=True)
class Mark:
    """A state to record, as `NotificationStore.mark` takes it (None keeps the
    row's value)."""

    state: State
    attempts: int | None = None
    error: str | None = None
    provider_id: str | None = None


@attrs.frozen(kw_only=True)
class Decision:
    """Record `record` (None: nothing), then do `action`; `after` is what the
    delivery knows once it is recorded."""

    record: Mark | None
    action: Action
    after: Delivery


def decide(
    delivery: Delivery,
    heard: Heard,
    *,
    max_attempts: int,
    give_up_after: float = math.inf,
) -> Decision:
    """One branch per kind of answer; `max_attempts` bounds sends and lookups,
    `give_up_after` (seconds since the first send) bounds resends in time."""
    if isinstance(heard, Start):
        return _first_look(delivery, give_up_after)
    if isinstance(heard, Claimed):  # the claim recorded `sending`, attempt 1
        claimed = attrs.evolve(delivery, recorded=State.SENDING, attempts=1)
        if not claimed.has_profile:  # (a claim is made only with a profile)
            return _nobody(claimed)
        return _keep(claimed, Send(1))
    if isinstance(heard, SeenBefore):
        return _keep(delivery, Read())
    if isinstance(heard, DeliveryStatus | LookupFailed):
        return _looked_up(delivery, heard, max_attempts, give_up_after)
    return _sent(delivery, heard, max_attempts)


def _first_look(d: Delivery, give_up_after: float) -> Decision:
    if d.recorded is None:  # the common first sight skips `pending`
        return _keep(d, Claim() if d.has_profile else Read())
    if d.recorded is State.SENT:
        return _keep(d, Ack())  # a redelivery after the commit, before the ack
    # A replay (its first delivery) starts afresh, wherever the row stood: a
    # message dead-lettered while our own database was down left it `sending` or
    # `failed`.
    if d.recorded is State.DEAD_LETTERED and not d.replayed:
        return _keep(d, DeadLetter(d.last_error or "dead-lettered before"))
    if d.replayed or d.recorded in (State.SENDING, State.UNKNOWN):
        # An earlier attempt may have been accepted (a dead letter's too).
        return _keep(d, LookUp())
    return _send(d, d.attempts + 1, give_up_after)


def _looked_up(
    d: Delivery,
    heard: DeliveryStatus | LookupFailed,
    max_attempts: int,
    give_up_after: float,
) -> Decision:
    """Sends only if the provider holds nothing under the key — or it cannot
    tell (SMTP) and a person chose to send again (a replay)."""
    attempts = 0 if d.replayed else d.attempts
    if isinstance(heard, LookupFailed) and heard.down:
        waiting = Mark(state=State.UNKNOWN, attempts=attempts, error=heard.said)
        return _record(d, waiting, WaitForProvider(heard.said))
    if isinstance(heard, LookupFailed):
        # A failed lookup is an attempt too: a provider that never answers one
        # ends in the DLQ, not in lookups for ever.
        tries = attempts + 1
        if tries >= max_attempts:
            reason = f"outcome unknown, {tries} status lookups failed: {heard.said}"
            gone = Mark(state=State.DEAD_LETTERED, attempts=tries, error=reason)
            return _record(d, gone, DeadLetter(reason))
        unknown = Mark(state=State.UNKNOWN, attempts=tries, error=heard.said)
        return _record(d, unknown, RetryLater(tries, heard.retry_after, heard.said))
    if heard is DeliveryStatus.ACCEPTED:
        return _record(d, Mark(state=State.SENT), Ack())
    if heard is DeliveryStatus.UNKNOWN and not d.replayed:  # a person decides
        reason = "outcome unknown and the provider offers no status lookup"
        gone = Mark(state=State.DEAD_LETTERED, error=reason)
        return _record(d, gone, DeadLetter(reason))
    return _send(d, attempts + 1, give_up_after)


def _send(d: Delivery, attempt: int, give_up_after: float) -> Decision:
    if not d.has_profile:
        return _nobody(d)
    # Retries are bounded in time too, under the provider's key lifetime: a
    # resend after it forgot the key could send twice. A replay's first
    # delivery is a person's choice (`club dlq replay` holds back the old).
    if not d.replayed and d.age_s >= give_up_after:
        reason = (
            f"gave up after retrying for {d.age_s:.0f} s "
            f"(CLUB_NOTIFY_GIVE_UP_AFTER): {d.last_error or 'no answer'}"
        )
        gone = Mark(state=State.DEAD_LETTERED, error=reason)
        return _record(d, gone, DeadLetter(reason))
    # `sending` is committed before the call: a worker killed after it leaves a
    # row that says "the outcome is not known".
    return _record(d, Mark(state=State.SENDING, attempts=attempt), Send(attempt))


def _nobody(d: Delivery) -> Decision:
    reason = f"student {d.student_id} has no profile to write to"
    return _record(d, Mark(state=State.DEAD_LETTERED, error=reason), DeadLetter(reason))


def _sent(
    d: Delivery, heard: Accepted | Refused | Failed | Lost, max_attempts: int
) -> Decision:
    """The answer to the send of attempt `d.attempts`."""
    attempt = d.attempts
    if isinstance(heard, Accepted):
        sent = Mark(state=State.SENT, provider_id=heard.provider_id)
        return _record(d, sent, Ack())
    if isinstance(heard, Refused):
        gone = Mark(state=State.DEAD_LETTERED, error=heard.said)
        return _record(d, gone, DeadLetter(f"permanent: {heard.said}"))
    if isinstance(heard, Failed):
        return _failed(d, heard, max_attempts)
    if attempt >= max_attempts:  # a replay looks it up first
        reason = f"outcome unknown after {attempt} attempts: {heard.said}"
        gone = Mark(state=State.DEAD_LETTERED, error=reason)
        return _record(d, gone, DeadLetter(reason))
    unknown = Mark(state=State.UNKNOWN, error=heard.said)
    return _record(d, unknown, LookUpLater(heard.said))


def _failed(d: Delivery, heard: Failed, max_attempts: int) -> Decision:
    attempt = d.attempts
    if heard.down:  # the attempt is given back: the provider failed everyone
        given_back = Mark(state=State.FAILED, attempts=attempt - 1, error=heard.said)
        return _record(d, given_back, WaitForProvider(heard.said))
    if attempt >= max_attempts:
        reason = f"gave up after {attempt} attempts: {heard.said}"
        gone = Mark(state=State.DEAD_LETTERED, error=reason)
        return _record(d, gone, DeadLetter(reason))
    failed = Mark(state=State.FAILED, error=heard.said)
    return _record(d, failed, RetryLater(attempt, heard.retry_after, heard.said))


def _keep(d: Delivery, action: Action) -> Decision:
    return Decision(record=None, action=action, after=d)


def _record(d: Delivery, mark: Mark, action: Action) -> Decision:
    """As the store records it: a value left None keeps the row's."""
    after = attrs.evolve(
        d,
        recorded=mark.state,
        attempts=d.attempts if mark.attempts is None else mark.attempts,
        last_error=d.last_error if mark.error is None else mark.error,
    )
    return Decision(record=mark, action=action, after=after)
