"""One piece of work followed through the chain, and who must move it on now.

The facts are collected by the adapters (event store, relay position, inboxes,
notification rows, the saga's deadline row, JetStream, the DLQ); `next_steps` is a
pure function of them. It answers the incident question of docs/background.md §33:
"who is now obliged to move this work forward, and where is that recorded?" — each
answer names a role and the row or message that holds the obligation, never a guess.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from application.dlq_owners import RELAY_DLQ

EVENTS_STREAM = "CLUB_EVENTS"
DLQ_STREAM = "CLUB_DLQ"
# The states of a notification row in which the worker still owes a send.
OWED_STATES = {
    "pending": "send the {kind} e-mail",
    "sending": (
        "finish the {kind} e-mail's send (after a crash: look its outcome up at "
        "the provider before any resend)"
    ),
    "unknown": (
        "look the {kind} e-mail's outcome up at the provider, then send it if it "
        "never arrived"
    ),
    "failed": "retry the {kind} e-mail (the provider refused it for now)",
}
# A purchase in these states needs nothing more from the saga.
SETTLED = {"confirmed", "declined", "refunded", "alternative_accepted"}


@attrs.frozen(kw_only=True)
class EventFact:
    """One stored event of the aggregate, as the event store and the relay see it."""

    notification_id: int
    version: int
    type: str  # the internal event's class name, e.g. Enrollment.Confirmed
    stored_at: datetime | None  # None: this version cannot decode it
    event_id: UUID | None  # None: it stays internal (never published)
    subject: str | None = None
    asks_for_email: bool = False
    asks_for_export: bool = False
    wakes_saga: bool = False

    @property
    def published_kind(self) -> bool:
        return self.event_id is not None


@attrs.frozen(kw_only=True)
class RelayFact:
    position: int  # every notification id up to it is published
    holder: str | None  # who holds the relay's lease
    lease_until: datetime | None
    live: bool  # the lease has not run out

    def published(self, event: EventFact) -> bool:
        return event.notification_id <= self.position


@attrs.frozen(kw_only=True)
class StreamFact:
    """Where an event's message sits in CLUB_EVENTS."""

    event_id: UUID
    seq: int | None  # None: not found (not yet published, or not looked up)
    found_by: str  # "inbox", "dlq", "stream search", "not found"
    stored_at: datetime | None = None  # when the stream stored it


@attrs.frozen(kw_only=True)
class ConsumerFact:
    """One durable's view of one event."""

    consumer: str
    kind: str  # "projection" or "work class"
    event_id: UUID
    # applied (inbox row) | acked (at or below the ack floor) | delivered (above
    # the floor: in hand, due again, or acked out of order — JetStream does not
    # say which) | waiting (not yet delivered) | not yet published | unknown
    state: str
    applied_at: datetime | None = None  # projections: the inbox row's time
    pending: int = 0  # the durable's unfinished messages (all events)
    ack_floor: int = 0
    exists: bool = True

    @property
    def done(self) -> bool:
        return self.state in ("applied", "acked")


@attrs.frozen(kw_only=True)
class NotificationFact:
    event_id: UUID
    kind: str
    state: str
    attempts: int
    last_error: str | None
    created_at: datetime | None
    updated_at: datetime | None
    sent_at: datetime | None


@attrs.frozen(kw_only=True)
class DeadLetterFact:
    dlq_seq: int
    consumer: str
    event_id: str  # the original message id (the relay's: aggregate:version)
    reason: str
    owner: str
    at: datetime


@attrs.frozen(kw_only=True)
class SagaFact:
    """A purchase as the saga sees it: its state and its deadline row."""

    status: str
    next_step: str  # the purchase view's sentence
    payment_open: bool
    payment_id: str | None
    refund_state: str | None
    review_owner: str | None
    review_reason: str | None
    enrollment_id: UUID | None
    has_deadline_row: bool
    due_at: datetime | None
    claimed_by: str | None
    claimed_until: datetime | None
    last_error: str | None
    feed_position: int  # the saga's position in the notification log

    @property
    def settled(self) -> bool:
        return self.status in SETTLED or (
            self.status == "expired" and not self.payment_open
        )


@attrs.frozen(kw_only=True)
class ExportFact:
    status: str  # pending | running | succeeded | failed
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None


@attrs.frozen(kw_only=True)
class Trace:
    id: UUID
    kind: str  # enrollment | purchase | export | lesson | the aggregate's name
    events: list[EventFact]
    relay: RelayFact
    stream: dict[UUID, StreamFact] = attrs.Factory(dict)
    consumers: list[ConsumerFact] = attrs.Factory(list)
    notifications: list[NotificationFact] = attrs.Factory(list)
    dead_letters: list[DeadLetterFact] = attrs.Factory(list)
    saga: SagaFact | None = None
    export: ExportFact | None = None

    def letters_for(self, event: EventFact) -> list[DeadLetterFact]:
        ids = {str(event.event_id)} if event.event_id else set()
        return [d for d in self.dead_letters if d.event_id in ids]


@attrs.frozen(kw_only=True)
class Obligation:
    """Who must act, what they must do, and where that duty is written down."""

    owner: str
    action: str
    recorded_in: str


def next_steps(trace: Trace) -> list[Obligation]:
    """Every obligation still open, in the order of the chain; [] means done."""
    owed: list[Obligation] = []
    for event in trace.events:
        # An event the relay could not map is dead-lettered under its origin.
        origin = f"{trace.id}:{event.version}"
        unmapped = [
            d
            for d in trace.dead_letters
            if d.consumer == RELAY_DLQ and d.event_id == origin
        ]
        if unmapped:
            owed.extend(_replay(letter) for letter in unmapped)
        elif event.published_kind:
            owed.extend(_event_steps(trace, event))
    if trace.saga is not None:
        owed.extend(_saga_step(trace, trace.saga))
    return owed


def _event_steps(trace: Trace, event: EventFact) -> list[Obligation]:
    letters = trace.letters_for(event)
    if not trace.relay.published(event):
        return [_relay_step(trace.relay, event)]
    owed = [_replay(letter) for letter in letters]
    lettered = {letter.consumer for letter in letters}
    seq = trace.stream.get(event.event_id) if event.event_id else None
    for consumer in trace.consumers:
        if (
            consumer.event_id != event.event_id
            or consumer.done
            or consumer.consumer in lettered
        ):
            continue
        if consumer.kind == "projection":
            owed.append(_projection_step(consumer, event, seq))
    if event.asks_for_email and "notifications" not in lettered:
        owed.extend(_email_step(trace, event, seq))
    if event.asks_for_export and "exports" not in lettered:
        owed.extend(_export_step(trace, seq))
    return owed


def _relay_step(relay: RelayFact, event: EventFact) -> Obligation:
    who = (
        f"the relay (lease held by {relay.holder})"
        if relay.live and relay.holder
        else "the relay: no relay holds the lease now, start `club relay`"
    )
    return Obligation(
        owner=who,
        action=f"publish {event.type} to {EVENTS_STREAM}",
        recorded_in=(
            f"the event store's notification log: notification id "
            f"{event.notification_id} is past the relay position "
            f"{relay.position} (table relay_leases)"
        ),
    )


def _replay(letter: DeadLetterFact) -> Obligation:
    return Obligation(
        owner=f"the DLQ owner {letter.owner}",
        action=(
            f"fix the cause ({letter.reason}) and replay it: "
            f"`club dlq replay --consumer {letter.consumer}`"
        ),
        recorded_in=f"{DLQ_STREAM} seq {letter.dlq_seq} (consumer {letter.consumer})",
    )


def _message(seq: StreamFact | None, durable: str) -> str:
    where = (
        f"the message at {EVENTS_STREAM} seq {seq.seq}"
        if seq is not None and seq.seq is not None
        else f"its message in {EVENTS_STREAM}"
    )
    return f"{where}, not yet acked by durable `{durable}`"


def _projection_step(
    consumer: ConsumerFact, event: EventFact, seq: StreamFact | None
) -> Obligation:
    return Obligation(
        owner=f"the {consumer.consumer} projector (durable `{consumer.consumer}` on "
        f"{EVENTS_STREAM})",
        action=f"apply {event.type} to its read model",
        recorded_in=(
            f"{_message(seq, consumer.consumer)} ({consumer.pending} unfinished "
            f"there); no inbox row for it yet"
        ),
    )


def _email_step(
    trace: Trace, event: EventFact, seq: StreamFact | None
) -> list[Obligation]:
    row = next((n for n in trace.notifications if n.event_id == event.event_id), None)
    worker = next(
        (
            c
            for c in trace.consumers
            if c.consumer == "notifications" and c.event_id == event.event_id
        ),
        None,
    )
    pending = f" ({worker.pending} unfinished there)" if worker else ""
    owner = (
        f"the notifications worker pool (durable `notifications` on {EVENTS_STREAM})"
    )
    if row is None:
        return [
            Obligation(
                owner=owner,
                action=f"open and send the e-mail {event.type} asks for",
                recorded_in=f"{_message(seq, 'notifications')}{pending}; "
                "no notification row yet",
            )
        ]
    if row.state in OWED_STATES:
        attempts = f", attempts {row.attempts}" if row.attempts else ""
        error = f", last error: {row.last_error}" if row.last_error else ""
        return [
            Obligation(
                owner=owner,
                action=OWED_STATES[row.state].format(kind=row.kind),
                recorded_in=f"{_message(seq, 'notifications')}{pending} and "
                f"notification row state={row.state}{attempts}{error}",
            )
        ]
    if row.state == "dead-lettered":
        return [
            Obligation(
                owner="the notifications DLQ owner (`club dlq list --consumer "
                "notifications`)",
                action="find its entry (replayed and waiting in CLUB_REPLAY, or "
                "removed) and decide whether to send it again",
                recorded_in=f"notification row state=dead-lettered "
                f"({row.last_error or 'no reason recorded'}); no {DLQ_STREAM} entry "
                "names it any more",
            )
        ]
    return []  # sent


def _export_step(trace: Trace, seq: StreamFact | None) -> list[Obligation]:
    export = trace.export
    if export is None or export.status == "succeeded":
        return []
    if export.status == "failed":
        return [
            Obligation(
                owner="whoever asked for the export",
                action="ask for a new export (this one failed for good)",
                recorded_in=f"export {trace.id} status=failed in the event store "
                f"({export.error or 'no reason recorded'})",
            )
        ]
    return [
        Obligation(
            owner=f"the exports worker pool (durable `exports` on {EVENTS_STREAM})",
            action="write the roster file and record the export finished",
            recorded_in=f"{_message(seq, 'exports')} and export {trace.id} "
            f"status={export.status} (attempts {export.attempts}) in the event store",
        )
    ]


def _saga_step(trace: Trace, saga: SagaFact) -> list[Obligation]:
    if saga.settled:
        return []
    record = f"purchase {trace.id} status={saga.status} in the event store"
    if saga.status == "manual_review":
        return [
            Obligation(
                owner=saga.review_owner or "payments on-call",
                action=f"decide this purchase by hand: {saga.review_reason}",
                recorded_in=record,
            )
        ]
    if saga.has_deadline_row:
        due = f"due at {saga.due_at.isoformat()}" if saga.due_at else "not due"
        claim = (
            f", claimed by {saga.claimed_by} until {saga.claimed_until.isoformat()}"
            if saga.claimed_by and saga.claimed_until
            else ""
        )
        where = f"{record}; its saga_deadlines row {due}{claim}"
        if saga.last_error:
            where += f" (last error: {saga.last_error})"
    else:
        waking = [e for e in trace.events if e.wakes_saga]
        first = waking[0].notification_id if waking else 0
        where = (
            f"{record}; no saga_deadlines row yet: the saga's feed is at "
            f"notification id {saga.feed_position}, the purchase's first is {first}"
        )
    owner = "the saga (`club saga`)"
    if saga.status == "alternative_offered":
        owner = "the student (choose another lesson), else the saga (`club saga`)"
    return [Obligation(owner=owner, action=saga.next_step, recorded_in=where)]
