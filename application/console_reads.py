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


@attrs.frozen(kw_only=True)
class ReplayRequest:
    consumer: str
    operator: str
    reason: str
    batch: int = 100  # at most this many entries in this run
    rate_per_s: float = 10.0
    dry_run: bool = False

    def __attrs_post_init__(self) -> None:
        check_consumer(self.consumer)
        if not self.reason.strip():
            raise ValueError("say why (--reason): the replay is audited")
        if self.batch < 1:
            raise ValueError("--batch must be at least 1")
        if not 0 < self.rate_per_s <= 10_000:  # noqa: PLR2004
            raise ValueError("--rate must be more than 0 and at most 10000 per second")


@attrs.frozen(kw_only=True)
class ReplayReport:
    replay_id: UUID
    matched: list[DeadLetter]  # what was (or, dry-run, would be) handed back
    replayed: int
    outcome: str


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
