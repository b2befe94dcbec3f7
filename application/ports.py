"""What the application needs from the outside world, as protocols: every port here.

Each port speaks in values from the module of its area (an e-mail, a payment, an
answer, a notification's row); those modules import no port, so this one may
import them. Adapters implement these; `tests/ports/` holds a contract per port.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol
from uuid import UUID

import attrs
from eventsourcing.persistence import Notification as StoredNotification

from application.console_reads import (
    ALIVE_WITHIN_S,
    RATE_WINDOW_S,
    ConfirmedTotals,
    ConsumerHop,
    DeadLetter,
    DeadlineRow,
    DeadlinesHop,
    DiscardReport,
    DiscardRequest,
    DlqHop,
    DurableView,
    ExportFilesTally,
    Found,
    InboxRow,
    OutboxHop,
    PublishedEvent,
    Rates,
    ReplayReport,
    ReplayRequest,
    RoleBeat,
    StateCount,
    StreamSize,
)
from application.dlq_audit import DiscardRecord, HeldBackRecord
from application.email import DeliveryStatus, OutgoingEmail, SendResult
from application.idempotency import Answer, Recorded, Request, RequestId
from application.next_steps import DeadLetterFact, NotificationFact, RelayFact
from application.notification_decision import State
from application.notification_record import Notification, NotificationRequest
from application.payment import Payment, PaymentStatus, Refund, RefundStatus
from application.provider_circuit import CircuitView
from application.purchase_emails import PurchaseFacts
from application.work_lists import WorkPage, WorkTally
from domain.student import StudentProfile

# -- students ------------------------------------------------------------------


class StudentDirectory(Protocol):
    """Where profiles live: mutable and erasable, unlike the event log."""

    def save(self, profile: StudentProfile) -> None: ...

    def get(self, student_id: str) -> StudentProfile | None: ...


# -- idempotent requests -------------------------------------------------------


class AnswerStore(Protocol):
    """Where answers live. Answers with events are written by the event store's
    recorder in the events' transaction (`save(..., answers=...)`); this port reads
    them, and stores the answers of requests that changed nothing."""

    def find(self, requests: Sequence[Request]) -> dict[RequestId, Recorded]: ...

    def record(
        self, answers: Sequence[tuple[Request, Answer]]
    ) -> dict[RequestId, Recorded]:
        """Store answers that come without events. Returns what is stored for each
        request: its own answer, or the first one if a racing attempt answered it."""
        ...


class EnrollmentLookups(Protocol):
    """The two reads an idempotent enrollment makes before it decides, which a
    store may answer in one round trip: the answer recorded for the request's key
    (None: not answered yet), and whether the student is in the directory."""

    def key_and_student(
        self, request: Request, student_id: str
    ) -> tuple[Recorded | None, bool]: ...


# -- e-mail and notifications --------------------------------------------------


class EmailProvider(Protocol):
    """Sends under an idempotency key derived from the event id, so every retry
    and redelivery of one notification names the same message."""

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        """Raises one of the three `EmailSendError` subclasses on failure."""
        ...

    def status(self, idempotency_key: str) -> DeliveryStatus:
        """Raises only `TransientSendError` when the lookup itself fails (any
        status, any transport error): a failed lookup proves nothing either way."""
        ...


class ProviderCircuit(Protocol):
    """A provider's circuit, shared by every worker process
    (application/provider_circuit.py). Blocking: each is one short query at most."""

    def failed(self, error: str) -> bool:
        """One transient failure, not this message's own; True: the circuit is
        open now, so the attempt is not the message's to spend."""
        ...

    def answered(self) -> None:
        """The provider answered (accepted or refused): it is up."""
        ...


class NotificationStore(Protocol):
    def open(self, request: NotificationRequest) -> Notification:
        """The notification's row, created `pending` on first sight."""
        ...

    def open_sending(self, request: NotificationRequest) -> bool:
        """A first sight's row, created already `sending` at attempt 1 (committed
        when this returns): True. False, and nothing changed, when the
        notification was seen before."""
        ...

    def mark(
        self,
        event_id: UUID,
        state: State,
        *,
        attempts: int | None = None,
        error: str | None = None,
        provider_id: str | None = None,
    ) -> None:
        """Record a state (committed when this returns); `sent` stamps `sent_at`
        and is final: a row already sent is left as it is (a stale worker's
        later mark never undoes it)."""
        ...


class PurchaseLookup(Protocol):
    def facts(self, purchase_id: UUID) -> PurchaseFacts:
        """Raises NotFoundError for a purchase that was never recorded."""
        ...

    def bought(self, enrollment_id: UUID) -> bool:
        """Whether the enrollment is a purchase's seat (its access-granted e-mail
        already told the student; a second "you are enrolled" would repeat it)."""
        ...


# -- payments ------------------------------------------------------------------


class PaymentProvider(Protocol):
    """Every call carries an idempotency key that the caller keeps (recorded as an
    intent first), so a retry after any failure names the same charge or refund."""

    def charge(
        self, reference: str, amount_cents: int, idempotency_key: str
    ) -> Payment:
        """PENDING or CAPTURED; a decline raises `PaymentDeclinedError`, other
        failures one of the three `PaymentError` classes."""
        ...

    def status(self, idempotency_key: str) -> PaymentStatus:
        """Raises only `TransientPaymentError` when the lookup itself fails."""
        ...

    def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> Refund:
        """Raises one of the three `PaymentError` classes on failure."""
        ...

    def refund_status(self, idempotency_key: str) -> RefundStatus:
        """Raises only `TransientPaymentError` when the lookup itself fails."""
        ...


class WebhookRecords(Protocol):
    """Each provider event id once, with what its first delivery did."""

    def outcome_of(self, event_id: str) -> str | None:
        """The words kept with this event id; None: not seen yet."""
        ...

    def accept(
        self, *, event_id: str, type_: str, purchase_id: UUID | None, outcome: str
    ) -> str:
        """Keep the event id and wake its purchase, in one transaction; returns the
        words kept first (a racing redelivery may have written them)."""
        ...


# -- roster exports ------------------------------------------------------------


class StudentNames(Protocol):
    def names(self, student_ids: Sequence[str]) -> dict[str, str]:
        """Each known student's name; an erased profile is simply absent."""
        ...


class ExportFiles(Protocol):
    def write(
        self, export_id: UUID, header: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> str:
        """Write the whole file, durably, under its final name; return that name.
        Raises OSError when it cannot (a full disk, a missing directory)."""
        ...


# The operator's console reads the chain through these; what they answer with is
# in application/console_reads.py, and entrypoints/runtime/console_wiring.py wires
# each to its adapter.


class ChainCounts(Protocol):
    """Each hop's count and its oldest item's age, as the database knows them.
    Blocking: each read is one short query."""

    def outbox(self) -> OutboxHop: ...
    def outbox_age(self) -> float | None: ...
    def notification_states(self) -> list[StateCount]: ...
    def rates(self, window_seconds: float = RATE_WINDOW_S) -> Rates: ...
    def store_sizes(self) -> dict[str, int]: ...
    def store_ages(self) -> dict[str, float | None]: ...
    def inbox_horizons(self) -> dict[str, datetime]: ...
    def projection_positions(self) -> dict[str, int]: ...
    def saga_deadlines(self) -> DeadlinesHop | None: ...
    def roles_alive(self, within_seconds: float = ALIVE_WITHIN_S) -> list[RoleBeat]:
        """The roles whose heartbeat is younger than `within_seconds`."""
        ...


class ProviderCircuits(Protocol):
    """Each provider circuit's row, with the database's clock (for `club status`)."""

    def circuits(self) -> list[CircuitView]: ...


class ChainLags(Protocol):
    """Each durable's lag, each stream's size, the DLQ by consumer."""

    async def consumer_hops(self, durables: list[str]) -> list[ConsumerHop]: ...
    async def stream_sizes(self) -> list[StreamSize]: ...
    async def dlq_hops(self) -> list[DlqHop]: ...


class ExportFilesSize(Protocol):
    """Count, bytes and the oldest file's age; a missing directory holds nothing."""

    def __call__(
        self, directory: Path, now: float | None = None
    ) -> ExportFilesTally: ...


class TraceRecords(Protocol):
    """What the database records of one aggregate's journey. Blocking."""

    def stored_events(self, aggregate_id: UUID) -> list[StoredNotification]: ...
    def relay(self) -> RelayFact: ...
    def inbox_rows(self, event_ids: Collection[UUID]) -> list[InboxRow]: ...
    def notifications(self, event_ids: Collection[UUID]) -> list[NotificationFact]: ...
    def saga_deadline(self, purchase_id: UUID) -> DeadlineRow | None: ...
    def saga_feed_position(self) -> int: ...


class TraceMessages(Protocol):
    """What the broker knows of one event: its message, each durable's progress
    past it, the dead letters that name it."""

    async def durable_views(self, durables: list[str]) -> list[DurableView]: ...
    async def message_at(self, seq: int, event_id: str) -> Found | None: ...
    async def find_message(
        self, event_id: str, subject: str, occurred_at: datetime
    ) -> Found | None: ...
    async def letters_naming(self, ids: set[str]) -> list[DeadLetterFact]: ...


class DeadLetterQueue(Protocol):
    """The DLQ as people run it: read the entries, hand them back (audited)."""

    async def entries(
        self, consumer: str | None = None, *, limit: int | None = None
    ) -> list[DeadLetter]:
        """Oldest first: one consumer's, or all; at most `limit`."""
        ...

    async def event_ids(self, consumer: str) -> set[str]:
        """The original event ids of a consumer's dead letters."""
        ...

    async def replay(
        self,
        request: ReplayRequest,
        *,
        stop: asyncio.Event | None = None,
        progress: Callable[[DeadLetter], None] = lambda _: None,
    ) -> ReplayReport:
        """Hand back the matching entries, but those past the provider's key
        lifetime (ReplayRequest.held_back); audited with its filters."""
        ...

    async def discard(self, request: DiscardRequest) -> DiscardReport:
        """Remove the matching entries without handing them back (audited)."""
        ...


class AuditRecords(Protocol):
    """What the database says was published, and what each consumer applied.
    Blocking."""

    def published_up_to_position(self) -> list[PublishedEvent]: ...
    def applied_event_ids(self, consumer: str) -> set[str]: ...
    def inbox_horizon(self, consumer: str) -> datetime | None: ...


class ConfirmedCounts(Protocol):
    def confirmed_totals(self) -> ConfirmedTotals: ...


class WorkLists(Protocol):
    """A person's work by state: purchases, notifications, exports
    (application/work_lists.py). Blocking."""

    def page(self, kind: str, state: str, *, limit: int, offset: int = 0) -> WorkPage:
        """Oldest in its state first; a ValueError names the valid states."""
        ...

    def tallies(self) -> list[WorkTally]:
        """Each watched state's count and its oldest item."""
        ...


class DlqAuditTrail(Protocol):
    """The DLQ's audit rows, newest first. Blocking."""

    def discards(self, limit: int) -> list[DiscardRecord]: ...
    def held_back(self, limit: int) -> list[HeldBackRecord]:
        """Replays that held entries back past the provider's key lifetime."""
        ...


@attrs.frozen(kw_only=True)
class ConsoleReads:
    """Every read the console makes, as the composition root wired them."""

    chain_counts: ChainCounts
    chain_lags: ChainLags
    export_files: ExportFilesSize
    trace_records: TraceRecords
    trace_messages: TraceMessages
    dead_letters: DeadLetterQueue
    audit_records: AuditRecords
    confirmed: ConfirmedCounts
    work_lists: WorkLists
    dlq_audit: DlqAuditTrail
    circuits: ProviderCircuits | None = None
