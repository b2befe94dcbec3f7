"""What the operator's console reads, as ports: the chain's hops, one id's trace,
the dead letters and their replay, the audit's holes, the confirmed totals.

The console (`club status|trace|dlq|audit`, the /ops routes and page) asks these
questions and nothing else; the adapters answer them from PostgreSQL, JetStream and
the exports directory, and the composition root hands them over together as one
`ConsoleReads`. The records they answer with live here, beside the questions.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID

import attrs

RATE_WINDOW_S = 60.0  # rates are what happened over the last minute
# Each role stamps its heartbeat this often; one silent for three beats is not alive.
BEAT_INTERVAL_S = 5.0
ALIVE_WITHIN_S = 3 * BEAT_INTERVAL_S


# The chain, hop by hop: the database's side.


@attrs.frozen(kw_only=True)
class OutboxHop:
    position: int  # the relay's: every notification id up to it is published
    unpublished: int
    oldest_age_seconds: float | None  # None: nothing waits


@attrs.frozen(kw_only=True)
class StateCount:
    state: str
    count: int
    oldest_age_seconds: float  # since the notification was opened


@attrs.frozen(kw_only=True)
class Rates:
    window_seconds: float
    enrollment_events: int  # arrivals: events that ask for an e-mail
    notifications_done: int  # service: sent, or failed for good

    @property
    def arrival_per_s(self) -> float:
        return self.enrollment_events / self.window_seconds

    @property
    def service_per_s(self) -> float:
        return self.notifications_done / self.window_seconds


@attrs.frozen(kw_only=True)
class DeadlinesHop:
    scheduled: int
    overdue: int
    oldest_overdue_seconds: float | None


@attrs.frozen(kw_only=True)
class RoleBeat:
    """A running role's last heartbeat: one per process (`instance`)."""

    kind: str  # api | relay | projector | worker | saga | trim
    name: str  # the projection or work class ("" for the others)
    instance: str  # host:pid:random
    host: str
    pid: int
    last_beat_seconds_ago: float


# The chain, hop by hop: the broker's side.


@attrs.frozen(kw_only=True)
class ConsumerHop:
    consumer: str
    exists: bool
    num_pending: int  # not yet delivered
    num_ack_pending: int  # delivered, not yet acked: in a worker's hands
    redelivered: int
    waiting_pulls: int  # 0 with work pending: nobody is pulling
    oldest_age_seconds: float | None  # None: nothing waits, or unreadable

    @property
    def lag_events(self) -> int:
        """Everything the consumer has not finished."""
        return self.num_pending + self.num_ack_pending


@attrs.frozen(kw_only=True)
class StreamSize:
    stream: str
    messages: int
    bytes: int


@attrs.frozen
class DlqHop:
    consumer: str
    messages: int
    oldest_age_seconds: float
    # Entries within EXPIRING_WITHIN_S of the stream's max_age: gone unseen soon.
    expiring: int = 0


EXPIRING_WITHIN_S = 86_400.0  # a day's warning before the DLQ forgets an entry


# The export files beside the stores.


@attrs.frozen
class ExportFilesTally:
    files: int = 0
    bytes: int = 0
    oldest_age_seconds: float | None = None


# One id's trace.


@attrs.frozen(kw_only=True)
class InboxRow:
    consumer: str
    event_id: UUID
    stream_seq: int
    applied_at: datetime | None


@attrs.frozen(kw_only=True)
class DeadlineRow:
    due_at: datetime | None
    claimed_by: str | None
    claimed_until: datetime | None
    last_error: str | None


@attrs.frozen(kw_only=True)
class DurableView:
    consumer: str
    exists: bool
    filter_subject: str | None
    ack_floor: int  # every message up to it is acked
    delivered: int  # the last stream sequence handed out
    unfinished: int  # not yet delivered + delivered and not yet acked


@attrs.frozen(kw_only=True)
class Found:
    seq: int
    stored_at: datetime | None


# The dead letters, and their replay.

CONSUMER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a subject token


def check_consumer(name: str) -> str:
    """One consumer's name, as a subject token: a `>` or `*` (or a dot) would make
    `club.dlq.<name>` a pattern over other consumers' entries."""
    if not CONSUMER_NAME.fullmatch(name):
        msg = f"--consumer names one consumer (letters, digits, - and _), not {name!r}"
        raise ValueError(msg)
    return name


@attrs.frozen(kw_only=True)
class DeadLetter:
    dlq_seq: int
    consumer: str
    original_subject: str
    original_seq: int | None
    event_id: str
    reason: str
    owner: str
    deliveries: int | None
    # The consumer's first failed attempt of this message (None: not recorded, as in
    # entries written before it was); a replay that fails again starts anew.
    first_failed_at: datetime | None
    last_failed_at: datetime  # when it was dead-lettered
    data: bytes
    headers: dict[str, str]

    def age_seconds(self, now: datetime | None = None) -> float:
        return ((now or datetime.now(UTC)) - self.last_failed_at).total_seconds()

    @property
    def event_type(self) -> str:
        """The type its original subject names (`club.events.<aggregate>.<Type>`)."""
        return self.original_subject.rpartition(".")[2]

    def failing_since(self) -> datetime:
        """Its first failure; dead-lettered, if that was not recorded."""
        return self.first_failed_at or self.last_failed_at


@attrs.frozen(kw_only=True)
class DlqFilter:
    """Which entries an operator means: all of the given tests hold (none: every
    entry). `because` is a piece of the recorded reason (Club-Reason), `event_type`
    the type the original subject names, `event_ids` the original events' ids."""

    because: str = ""
    event_type: str = ""
    event_ids: frozenset[str] = frozenset()

    @property
    def narrows(self) -> bool:
        return bool(self.because or self.event_type or self.event_ids)

    def matches(self, entry: DeadLetter) -> bool:
        return (
            (not self.because or self.because.casefold() in entry.reason.casefold())
            and (not self.event_type or entry.event_type == self.event_type)
            and (not self.event_ids or entry.event_id in self.event_ids)
        )

    def recorded(self) -> dict[str, object]:
        """As the audit record keeps it."""
        return {
            "because": self.because,
            "type": self.event_type,
            "ids": sorted(self.event_ids),
        }


# An e-mail provider forgets an idempotency key after this long (CLUB_EMAIL_KEY_
# LIFETIME): a message first tried before then, sent again, may be sent twice.
DEFAULT_KEY_LIFETIME_S = 86_400.0
# The consumers whose hand-backs reach that provider under the message's key.
KEY_BOUND_CONSUMERS = frozenset({"notifications"})


@attrs.frozen(kw_only=True)
class ReplayRequest:
    consumer: str
    operator: str
    reason: str
    batch: int = 100  # at most this many entries in this run
    rate_per_s: float = 10.0
    dry_run: bool = False
    only: DlqFilter = DlqFilter()
    key_lifetime_s: float = DEFAULT_KEY_LIFETIME_S
    past_key_lifetime: bool = False  # the operator checked: send those anyway

    def __attrs_post_init__(self) -> None:
        check_consumer(self.consumer)
        if not self.reason.strip():
            raise ValueError("say why (--reason): the replay is audited")
        if self.batch < 1:
            raise ValueError("--batch must be at least 1")
        if not 0 < self.rate_per_s <= 10_000:  # noqa: PLR2004
            raise ValueError("--rate must be more than 0 and at most 10000 per second")
        if self.past_key_lifetime and not self.only.event_ids:
            msg = (
                "--past-key-lifetime sends entries the provider may already have"
                " sent: name each one you checked with --id EVENT_ID"
            )
            raise ValueError(msg)

    def held_back(self, entry: DeadLetter, now: datetime) -> bool:
        """Past the provider's key lifetime, a resend is not blind: kept back."""
        return (
            self.consumer in KEY_BOUND_CONSUMERS
            and not self.past_key_lifetime
            and (now - entry.failing_since()).total_seconds() > self.key_lifetime_s
        )


@attrs.frozen(kw_only=True)
class ReplayReport:
    replay_id: UUID
    matched: list[DeadLetter]  # what was (or, dry-run, would be) handed back
    replayed: int
    outcome: str
    # Matched, but past the provider's key lifetime: not handed back.
    held_back: list[DeadLetter] = attrs.Factory(list)


@attrs.frozen(kw_only=True)
class DiscardRequest:
    """Entries removed from the DLQ for good, never handed back: audited."""

    consumer: str
    operator: str
    reason: str
    only: DlqFilter = DlqFilter()
    everything: bool = False  # --all: every entry of the consumer's
    dry_run: bool = False

    def __attrs_post_init__(self) -> None:
        check_consumer(self.consumer)
        if not self.reason.strip():
            msg = (
                "say why (--reason TEXT): a discard removes dead letters for good,"
                " and the audit record keeps the reason"
            )
            raise ValueError(msg)
        if self.everything == self.only.narrows:
            msg = (
                "say which entries to discard: --id EVENT_ID, --because TEXT or"
                " --type EventName, or --all for every one of the consumer's"
                " (not --all together with those)"
            )
            raise ValueError(msg)


@attrs.frozen(kw_only=True)
class DiscardReport:
    discard_id: UUID
    matched: list[DeadLetter]  # what was (or, dry-run, would be) discarded
    discarded: int


class NotReplayableError(ValueError):
    """No durable reads what a replay would hand this consumer."""


# The audit: published events each consumer never saw.


class PublishedEvent(NamedTuple):
    notification_id: int
    event_id: str
    type: str
    occurred_at: datetime  # UTC


# Confirmed enrollments: the event store beside the statistics.


@attrs.frozen(kw_only=True)
class ConfirmedTotals:
    store: int
    projection: int

    @property
    def caught_up(self) -> bool:
        return self.projection >= self.store
